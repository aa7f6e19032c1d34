import { isCluster, type RedisClient } from '../redis';

/**
 * The dispatch epoch markers (docs/decisions/redis-cluster.md, "Loss detection"). A marker is a
 * key the dispatchers write `SET NX` and nobody deletes: when one is missing, the Redis that held
 * it lost its data and the dispatch state is rebuilt from Postgres. One server has one marker. A
 * Redis Cluster has one per primary, since any primary may lose its data on its own (a FLUSHALL,
 * a restart without persistence): `<base>:{epoch.<n>}`, with the smallest n whose hash tag lands
 * in that primary's slots.
 */
export async function epochKeys(client: RedisClient, base: string): Promise<string[]> {
  if (!isCluster(client)) return [base];
  const ranges = (await client.cluster('SLOTS')) as unknown as Array<[number, number, [string, number, string?]]>;
  const byPrimary = new Map<string, Array<[number, number]>>();
  for (const [from, to, primary] of ranges) {
    const id = primary[2] ?? `${primary[0]}:${primary[1]}`;
    byPrimary.set(id, [...(byPrimary.get(id) ?? []), [from, to]]);
  }
  const keys: string[] = [];
  for (const slots of byPrimary.values()) {
    for (let n = 0; n < 1_000_000; n++) {
      const slot = keySlot(`epoch.${n}`);
      if (slots.some(([from, to]) => slot >= from && slot <= to)) {
        keys.push(`${base}:{epoch.${n}}`);
        break;
      }
    }
  }
  return keys.sort();
}

/**
 * Writes every missing marker; true when one was missing (first start, or a Redis or a cluster
 * primary lost its data). A marker the cluster has just moved to a new primary also reads as
 * missing once: a rebuild too many is harmless, one too few is not. So a marker written anew is
 * reported even when another primary did not answer (that one's error is thrown only when no
 * marker was missing), and the caller deletes the markers again when its rebuild fails.
 */
export async function renewEpoch(client: RedisClient, base: string, now = Date.now()): Promise<{ lost: string[] }> {
  const keys = await epochKeys(client, base);
  const set = await Promise.allSettled(keys.map((k) => client.set(k, String(now), 'NX')));
  const lost = keys.filter((_, i) => set[i]!.status === 'fulfilled' && (set[i] as PromiseFulfilledResult<unknown>).value === 'OK');
  const failed = set.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed && lost.length === 0) throw failed.reason;
  return { lost };
}

const CRC16_TABLE = (() => {
  const t = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i << 8;
    for (let b = 0; b < 8; b++) c = c & 0x8000 ? ((c << 1) ^ 0x1021) & 0xffff : (c << 1) & 0xffff;
    t[i] = c;
  }
  return t;
})();

/** Redis Cluster's hash slot of a key (CRC16/XMODEM mod 16384, of its hash tag when it has one). */
export function keySlot(key: string): number {
  let bytes = Buffer.from(key);
  const open = bytes.indexOf(0x7b);
  if (open >= 0) {
    const close = bytes.indexOf(0x7d, open + 1);
    if (close > open + 1) bytes = bytes.subarray(open + 1, close);
  }
  let crc = 0;
  for (const byte of bytes) crc = ((crc << 8) & 0xffff) ^ CRC16_TABLE[((crc >> 8) ^ byte) & 0xff]!;
  return crc % 16384;
}
