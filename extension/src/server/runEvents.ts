/**
 * The server sends run events in batches (`tensorsight/runEvent` carries a RunEventBatch, a few a second at most);
 * the rest of the extension (training panel, status) takes them one at a time. Pure, so the unit tests check it.
 */
import type { RunEvent, RunEventBatch, RunEventParams } from './protocol';

/** The events of one `tensorsight/runEvent` notification, one by one; anything malformed is left out. */
export function runEventsOf(batch: unknown): RunEventParams[] {
  if (typeof batch !== 'object' || batch === null) return [];
  const { sessionId, events } = batch as Partial<RunEventBatch>;
  if (typeof sessionId !== 'string' || !Array.isArray(events)) return [];
  return events
    .filter((event): event is RunEvent => typeof event === 'object' && event !== null && typeof event.type === 'string')
    .map((event) => ({ sessionId, event }));
}
