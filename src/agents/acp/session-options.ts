// A caller's model / effort choice applied to a fresh or loaded ACP session. Adapters never pick a model on their own:
// nothing is sent unless the caller asked, and a choice the agent cannot honour is refused rather than ignored.
import * as acp from '@agentclientprotocol/sdk';
import { type AcpProcess, AgentStartError } from './process.ts';

/** Listing every offered value in an error is useful up to a point. */
const MAX_LISTED_VALUES = 20;

/** What session/new and session/load answer with, including Gemini CLI's draft `models` field. */
export type SessionSetup = Pick<acp.NewSessionResponse, 'configOptions'> & {
  models?: { availableModels?: { modelId: string }[] } | null;
};

export async function applySessionChoices(
  proc: AcpProcess,
  sessionId: string,
  setup: SessionSetup,
  choices: { model?: string; effort?: string },
  signal?: AbortSignal,
): Promise<void> {
  const name = proc.agentName;
  if (choices.model) {
    const option = selectOption(setup, 'model');
    if (option) await setSelect(proc, sessionId, option, choices.model, 'model', signal);
    else if (setup.models?.availableModels) {
      // Gemini CLI offers models through the draft `models` field and `session/set_model`, not config options.
      requireValue(
        name,
        'model',
        choices.model,
        setup.models.availableModels.map((m) => m.modelId),
      );
      await proc.startupStep(
        'session/set_model',
        proc.agent.request<unknown, { sessionId: string; modelId: string }>('session/set_model', {
          sessionId,
          modelId: choices.model,
        }),
        signal,
      );
    } else
      throw new AgentStartError(
        `agent "${name}" does not let a client choose its model over ACP; leave "model" unset to use the agent's own default`,
      );
  }
  if (choices.effort) {
    const option = selectOption(setup, 'thought_level');
    if (!option)
      throw new AgentStartError(
        `agent "${name}" does not let a client choose a reasoning effort over ACP; leave "effort" unset`,
      );
    await setSelect(proc, sessionId, option, choices.effort, 'effort', signal);
  }
}

/** The models and efforts a session offers to choose, as agent_agents lists them (rule: hub-tools). */
export function offeredChoices(setup: SessionSetup): { models?: string[]; efforts?: string[] } {
  const model = selectOption(setup, 'model');
  const effort = selectOption(setup, 'thought_level');
  const models = model ? selectValues(model) : setup.models?.availableModels?.map((m) => m.modelId);
  return {
    ...(models?.length ? { models } : {}),
    ...(effort ? { efforts: selectValues(effort) } : {}),
  };
}

type SelectOption = Extract<acp.SessionConfigOption, { type: 'select' }>;

function selectOption(setup: SessionSetup, category: string): SelectOption | undefined {
  return setup.configOptions?.find((o): o is SelectOption => o.type === 'select' && o.category === category);
}

function selectValues(option: SelectOption): string[] {
  return option.options.flatMap((o) => ('group' in o ? o.options.map((g) => g.value) : [o.value]));
}

function requireValue(agentName: string, what: string, value: string, offered: string[]): void {
  if (offered.includes(value)) return;
  const listed = offered.slice(0, MAX_LISTED_VALUES).join(', ');
  const more = offered.length > MAX_LISTED_VALUES ? `, … (${offered.length} in all)` : '';
  throw new AgentStartError(`agent "${agentName}" has no ${what} "${value}"; it offers: ${listed}${more}`);
}

async function setSelect(
  proc: AcpProcess,
  sessionId: string,
  option: SelectOption,
  value: string,
  what: string,
  signal?: AbortSignal,
): Promise<void> {
  requireValue(proc.agentName, what, value, selectValues(option));
  if (option.currentValue === value) return;
  await proc.startupStep(
    'session/set_config_option',
    proc.agent.request(acp.methods.agent.session.setConfigOption, { sessionId, configId: option.id, value }),
    signal,
  );
}
