import { isCluster, primaries, type RedisClient } from '@svc/core';
import { allNodes, epochKeys } from '@svc/core/internals';

/**
 * Redis commands of tests that act on a whole server, made to act on every node of a cluster
 * too, so one test body checks either deployment (docs/decisions/redis-cluster.md). On a single
 * server each is the plain command.
 */

/** KEYS `pattern` on every primary (a cluster client would ask one node only). */
export async function keysOnEveryPrimary(client: RedisClient, pattern: string): Promise<string[]> {
  const found = await Promise.all(primaries(client).map((node) => node.keys(pattern)));
  return found.flat().sort();
}

/**
 * One key under `base` on each primary (`<base>:{epoch.<n>}` chosen like the dispatchers' epoch
 * markers), or `base` itself on a single server: a sentinel per primary shows a flush of each.
 */
export function keyOnEveryPrimary(client: RedisClient, base: string): Promise<string[]> {
  return epochKeys(client, base);
}

/**
 * FLUSHALL on every primary; resolves to how many were flushed once a sentinel written on each
 * beforehand is gone (the processes start writing their own keys again at once, so a count of
 * keys would not show it).
 */
export async function flushEveryPrimary(client: RedisClient): Promise<number> {
  const sentinels = await keyOnEveryPrimary(client, 'flush-sentinel');
  for (const key of sentinels) await client.set(key, '1');
  const nodes = primaries(client);
  const answers = await Promise.all(nodes.map((node) => node.flushall()));
  if (answers.some((a) => a !== 'OK')) throw new Error(`FLUSHALL answered ${answers.join(', ')}`);
  const left = await Promise.all(sentinels.map((key) => client.exists(key)));
  if (left.some((n) => n !== 0)) throw new Error(`a flush sentinel survived: ${sentinels.filter((_, i) => left[i] !== 0).join(', ')}`);
  return nodes.length;
}

/**
 * CLIENT KILL of the subscriber connection of a client made with `connectionName: name`, on
 * whichever node it is: on a cluster it is named `ioredis-cluster(subscriber):<name>` (the
 * client's other connections carry `name` itself); resolves to how many were killed. On a cluster
 * that can be two for a moment (seen once in the suite): ioredis's cluster subscriber replaces
 * its connection when its node leaves the client's pool (ClusterSubscriber.selectSubscriber), and
 * the one it left stays in CLIENT LIST until its close reaches the server; both go.
 */
export async function killSubscriberNamed(client: RedisClient, name: string): Promise<number> {
  const wanted = isCluster(client) ? `ioredis-cluster(subscriber):${name}` : name;
  let killed = 0;
  for (const node of allNodes(client)) {
    const list = (await node.client('LIST')) as string;
    for (const line of list.split('\n')) {
      if (line.match(/\bname=(\S*)/)?.[1] !== wanted) continue;
      const id = line.match(/\bid=(\d+)/)?.[1];
      if (id) killed += Number(await node.call('CLIENT', 'KILL', 'ID', id));
    }
  }
  return killed;
}
