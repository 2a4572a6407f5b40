// Types of prereqs.mjs (plain JavaScript, so that the system Node runs it before `npm ci`).
export interface Prereq {
  command: string;
  apt: string;
  required: boolean;
  why: string;
}
export declare const PREREQS: Prereq[];
export declare function missingPrereqs(pathEnv?: string): Prereq[];
export declare function prereqProblem(pathEnv?: string): string | undefined;
