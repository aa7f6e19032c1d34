// The Python the Python SDK is tested with (sdk/python): one that imports websockets. PYTHON_PATH
// wins; else Debian's /usr/bin/python3 (with python3-websockets), else a python3 on PATH.
// CommonJS so that jest.config.js and scripts/test.mjs share it.
const { spawnSync } = require('node:child_process');
const { existsSync } = require('node:fs');
const path = require('node:path');

// websockets to run robots; venv, ensurepip, setuptools and wheel to install the package as a
// customer does, with no package index
const canRunTheSdkTests = (python) => spawnSync(python, ['-c', 'import sys, websockets, venv, ensurepip, setuptools, wheel; sys.exit(0 if sys.version_info >= (3, 11) else 1)'], { stdio: 'ignore' }).status === 0;

function findPython(env = process.env) {
  if (env.PYTHON_PATH) return existsSync(env.PYTHON_PATH) && canRunTheSdkTests(env.PYTHON_PATH) ? env.PYTHON_PATH : null;
  const candidates = ['/usr/bin/python3', ...(env.PATH || '').split(':').filter(Boolean).map((dir) => path.join(dir, 'python3'))];
  for (const candidate of candidates) if (existsSync(candidate) && canRunTheSdkTests(candidate)) return candidate;
  return null;
}

/** What scripts/test.mjs says when these tests are left out. */
const LEFT_OUT = { suites: 'the Python SDK\'s tests (sdk/python, *.python.test.ts)', missing: 'Python 3.11+ with websockets, venv, setuptools and wheel', install: 'apt-get install -y python3 python3-websockets python3-venv python3-setuptools python3-wheel, or set PYTHON_PATH' };

module.exports = { findPython, LEFT_OUT, PYTHON_TESTS: '/sdk/python/|\\.python\\.test\\.ts$' };
