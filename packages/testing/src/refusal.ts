import { AppError } from '@svc/core';

/** The status and message a command refused with (fails the test when it did not refuse with an AppError). */
export async function refusal(p: Promise<unknown>): Promise<{ status: number; message: string }> {
  const err = await p.then(() => null, (e: unknown) => e);
  expect(err).toBeInstanceOf(AppError);
  return { status: (err as AppError).status, message: (err as AppError).message };
}
