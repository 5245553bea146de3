// Compile time only: the workflows the worker runs (./index) are exactly those Node code starts
// (src/contracts/workflow-types.ts), each with the same input and result. A workflow whose input
// changed, or one added on one side only, fails the type-check here.
import type { Workflows } from '../src/contracts/workflow-types';
import type * as workflows from './index';

type Exported = typeof workflows;
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type EachMatches = { [N in keyof Workflows]: Same<Exported[N], Workflows[N]> };
/** `true` only when no workflow's check is `false` (a union of the checks would admit `true`). */
type AllMatch = false extends EachMatches[keyof Workflows] ? false : Same<keyof Exported, keyof Workflows>;

export const signaturesMatch: AllMatch = true;
