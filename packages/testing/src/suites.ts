import { createBullDispatch, type BullDispatch, type Sql } from '@svc/core';
import { createTestContext, type TestContext } from './context';
import { Children, type WatchedDispatcher } from './processes';

/**
 * A test file's own context (database and Redis prefix), made in `beforeAll`, and the child
 * processes the file starts; in `afterAll` the children are killed before the context closes.
 * Read `ctx`, `sql` and `bull` inside tests (they exist from `beforeAll` on).
 */
export interface TestSuite<C extends TestContext = TestContext> {
  readonly ctx: C;
  readonly sql: Sql;
  readonly children: Children;
  /** a BullDispatch on the context's Redis prefix (with `bull: true`) */
  readonly bull: BullDispatch;
  /** the dispatcher started with `dispatcher: true` */
  readonly dispatcher: WatchedDispatcher;
}

export interface SuiteOptions<C extends TestContext> {
  /** how the context is made (default: createTestContext) */
  context?: () => Promise<C>;
  /** start a dispatcher on the context once it exists */
  dispatcher?: boolean;
  bull?: boolean;
}

export function testSuite<C extends TestContext = TestContext>(options: SuiteOptions<C> = {}): TestSuite<C> {
  const children = new Children();
  let ctx: C | undefined;
  let bull: BullDispatch | undefined;
  let dispatcher: WatchedDispatcher | undefined;
  beforeAll(async () => {
    ctx = options.context ? await options.context() : ((await createTestContext()) as C);
    if (options.bull) bull = createBullDispatch({ redis: ctx.redisTarget, prefix: ctx.redisPrefix });
    if (options.dispatcher) dispatcher = await children.watchedDispatcher(ctx);
  });
  afterAll(async () => {
    await children.stopAll();
    await bull?.close();
    await ctx?.close();
  });
  return {
    children,
    get ctx() {
      return ctx!;
    },
    get sql() {
      return ctx!.sql;
    },
    get bull() {
      if (!bull) throw new Error('this suite has no BullDispatch: make it with testSuite({ bull: true })');
      return bull;
    },
    get dispatcher() {
      if (!dispatcher) throw new Error('this suite started no dispatcher: make it with dispatcher: true');
      return dispatcher;
    },
  };
}

/** A test file's own database and Redis prefix, for tests of core that start no process. */
export function databaseSuite(): TestSuite {
  return testSuite();
}

/** A test file's context, a BullDispatch on its Redis prefix, and the processes it starts. */
export function processSuite(): TestSuite {
  return testSuite({ bull: true });
}
