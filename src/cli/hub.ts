import type { Command } from 'commander';

export function registerHubCommands(_program: Command): void {}
