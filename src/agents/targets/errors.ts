// What a target refuses with: a message naming the target and what is wrong, before anything runs.
export class TargetError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TargetError';
  }
}
