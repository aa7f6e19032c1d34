// The baseline of B1: a bare Koa + koa-bodyparser server that echoes the JSON body it receives.
// PORT and HOST from the environment; prints nothing until it listens.
import http from 'node:http';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const Koa = require('koa');
const bodyParser = require('koa-bodyparser');

const app = new Koa();
app.use(bodyParser({ enableTypes: ['json'], jsonLimit: '2mb' }));
app.use((ctx) => {
  ctx.body = { success: true, data: ctx.request.body ?? null };
});
const server = http.createServer(app.callback());
server.keepAliveTimeout = 65_000;
server.listen(Number(process.env.PORT), process.env.HOST ?? '127.0.0.1', () => console.log('listening'));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
