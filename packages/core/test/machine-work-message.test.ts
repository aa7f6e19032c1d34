import { decodeMachineWork } from '@svc/core';

/** The "machines have work" message (dispatch/stops.ts): whatever arrives on the channel, only well-formed entries pass. */
describe('decodeMachineWork', () => {
  it('keeps well-formed entries and drops the rest', () => {
    const id = '7d4f0d6e-3c1b-4a5e-9c55-0a3c4d5e6f70';
    expect(decodeMachineWork(JSON.stringify({ machines: [{ machine_id: id, at: 0 }, { machine_id: id, at: 1_900_000_000_000 }] })))
      .toEqual({ machines: [{ machine_id: id, at: 0 }, { machine_id: id, at: 1_900_000_000_000 }] });
    expect(decodeMachineWork(JSON.stringify({
      machines: [null, 7, { machine_id: 5, at: 0 }, { machine_id: id }, { machine_id: id, at: '0' }, { machine_id: id, at: 0, extra: { deep: true } }],
    }))).toEqual({ machines: [{ machine_id: id, at: 0 }] });
  });

  it('answers null for what is not such a message', () => {
    for (const raw of ['', 'not json', '[]', 'null', '{"machines":{}}', '{"machines":"x"}', JSON.stringify({ job_id: 'x', machine_id: 'y' })]) {
      expect([raw, decodeMachineWork(raw)]).toEqual([raw, null]);
    }
  });
});
