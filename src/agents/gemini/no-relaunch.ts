// Gemini CLI starts a second Node process with a bigger heap before it does anything else, unless this variable is
// set. A version probe (the `gemini` kind's, and the ACP preset's) needs none of that heap, so it sets it: one Node
// start-up of the CLI's large bundle instead of two.
export const NO_RELAUNCH = 'GEMINI_CLI_NO_RELAUNCH';
