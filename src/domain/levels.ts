import type { Cents } from './money';

export const LEVELS = [1, 2, 3, 4, 5] as const;
export type Level = (typeof LEVELS)[number];

/**
 * The level earned by cumulative spending plus current balance. `thresholds` are the Lv2..Lv5
 * entry amounts in cents, increasing.
 */
export function levelFor(spendingPlusBalance: Cents, thresholds: readonly Cents[]): Level {
  let level: Level = 1;
  thresholds.forEach((t, i) => {
    if (spendingPlusBalance >= t) level = (i + 2) as Level;
  });
  return level;
}

/** Levels are raised automatically and never go down (spec part 1). */
export function raisedLevel(current: Level, spendingPlusBalance: Cents, thresholds: readonly Cents[]): Level {
  return Math.max(current, levelFor(spendingPlusBalance, thresholds)) as Level;
}
