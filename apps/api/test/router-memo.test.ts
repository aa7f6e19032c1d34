import Koa from 'koa';
import request from 'supertest';
import { createRouter } from '../src/http/router';

/** Two routers in a row, as the app mounts health and /api/v1: the second appends to ctx.matched. */
function app() {
  const first = createRouter();
  first.get('/health', (ctx) => { ctx.body = 'ok'; });
  const second = createRouter('/api');
  second.get('/things/:id', (ctx) => { ctx.body = { id: ctx.params.id, matched: ctx.matched?.length ?? 0 }; });
  second.post('/things/:id', (ctx) => { ctx.body = { posted: ctx.params.id }; });
  const k = new Koa();
  k.use(first.routes());
  k.use(second.routes());
  k.use(second.allowedMethods());
  return { server: k.callback(), second };
}

describe('routers remember their matches', () => {
  it('answers a repeated path the same way every time, params and all', async () => {
    const { server } = app();
    for (let i = 0; i < 3; i++) {
      const a = await request(server).get('/api/things/a');
      // the GET and the POST layer of /api/things/:id match the path; nothing left over from earlier requests
      expect(a.body).toEqual({ id: 'a', matched: 2 });
      expect((await request(server).get('/api/things/b')).body).toEqual({ id: 'b', matched: 2 });
      expect((await request(server).post('/api/things/a')).body).toEqual({ posted: 'a' });
      expect((await request(server).delete('/api/things/a')).status).toBe(405);
      expect((await request(server).get('/health')).text).toBe('ok');
    }
  });

  it('hands out copies: changing a result does not change the next one', () => {
    const { second } = app();
    const one = second.match('/api/things/x', 'GET');
    expect([one.path.length, one.pathAndMethod.length, one.route]).toEqual([2, 1, true]);
    one.path.push(...one.path);
    one.pathAndMethod.length = 0;
    const two = second.match('/api/things/x', 'GET');
    expect([two.path.length, two.pathAndMethod.length, two.route]).toEqual([2, 1, true]);
    expect(two.pathAndMethod[0]!.methods).toContain('GET');
  });
});
