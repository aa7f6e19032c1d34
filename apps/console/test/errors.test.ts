import { ApiError as ClientError, TimeoutError } from '@svc/client';
import { ApiError, consoleError, formErrors, formFieldOf, toApiError } from '../src/lib/errors';

const FALLBACK = 'Algo salió mal. Inténtelo de nuevo.';

/** The API's error envelope as the console shows it: each message next to the field it names. */
describe('the error envelope in the console', () => {
  it('names a field as the form knows it, without the location the API puts first', () => {
    expect(formFieldOf('body → email')).toBe('email');
    expect(formFieldOf('body → items → 0 → data')).toBe('items.0.data');
    expect(formFieldOf('query → status')).toBe('status');
    expect(formFieldOf('reason')).toBe('reason');
    expect(formFieldOf('body')).toBe('body');
  });

  it('reads the envelope: status, code, Spanish message, field issues and request id', () => {
    const err = toApiError(422, {
      success: false,
      error: {
        code: 'VALIDATION_ERROR', message: 'Error de validación', request_id: 'req-1',
        details: [{ field: 'body → email', message: 'debe ser un correo válido' }, { nonsense: true }],
      },
    }, FALLBACK);
    expect(err).toBeInstanceOf(ApiError);
    expect([err.status, err.code, err.message, err.requestId]).toEqual([422, 'VALIDATION_ERROR', 'Error de validación', 'req-1']);
    expect(err.issues).toEqual([{ field: 'body → email', message: 'debe ser un correo válido' }]);
  });

  it('gives a body that is not the envelope the generic text, never "undefined"', () => {
    expect(toApiError(502, '<html>Bad gateway</html>', FALLBACK)).toMatchObject({ status: 502, code: 'INTERNAL_ERROR', message: FALLBACK });
    expect(toApiError(404, null, FALLBACK)).toMatchObject({ code: 'HTTP_ERROR', message: FALLBACK, issues: [] });
  });

  it('puts each field message next to its field and nothing in the general line', () => {
    const err = new ApiError(422, 'VALIDATION_ERROR', 'Error de validación', [
      { field: 'body → email', message: 'debe ser un correo válido' },
      { field: 'body → email', message: 'segundo mensaje del mismo campo' },
      { field: 'body → password', message: 'no debe estar vacío' },
    ]);
    expect(formErrors(err, ['email', 'password'], FALLBACK)).toEqual({
      fields: { email: 'debe ser un correo válido', password: 'no debe estar vacío' },
      general: null,
    });
  });

  it('keeps the message of a field the form does not show in the general line', () => {
    const err = new ApiError(422, 'VALIDATION_ERROR', 'Error de validación', [
      { field: 'body → reason', message: 'demasiado largo' },
      { field: 'body → comment', message: 'no permitido' },
    ]);
    expect(formErrors(err, ['reason'], FALLBACK)).toEqual({
      fields: { reason: 'demasiado largo' },
      general: 'Error de validación — comment: no permitido',
    });
  });

  it('shows an error without field issues (401, 409) as the general message', () => {
    const err = new ApiError(401, 'UNAUTHORIZED', 'Credenciales inválidas');
    expect(formErrors(err, ['email', 'password'], FALLBACK)).toEqual({ fields: {}, general: 'Credenciales inválidas' });
  });

  it('shows the generic text for anything that is not an answer of the API', () => {
    expect(formErrors(new TypeError('x is undefined'), ['email'], FALLBACK)).toEqual({ fields: {}, general: FALLBACK });
  });
});

/** A failed call of the typed client (@svc/client) becomes the console's error as before the client. */
describe('errors of the typed client in the console', () => {
  const TEXTS = { networkError: 'Sin conexión con el servidor.', unexpectedError: FALLBACK };

  it('reads an answer of the API from the body the client kept: message, issues, request id', () => {
    const body = {
      success: false,
      error: { code: 'VALIDATION_ERROR', message: 'Error de validación', request_id: 'req-2', details: [{ field: 'body → cron', message: 'no es válida' }] },
    };
    const err = consoleError(new ClientError(422, 'VALIDATION_ERROR', 'Error de validación', body.error.details, 'req-2', null, body), TEXTS);
    expect(err).toBeInstanceOf(ApiError);
    expect([err.status, err.code, err.message, err.requestId]).toEqual([422, 'VALIDATION_ERROR', 'Error de validación', 'req-2']);
    expect(err.issues).toEqual([{ field: 'body → cron', message: 'no es válida' }]);
  });

  it('gives an answer that is not the envelope the generic text, as before', () => {
    const err = consoleError(new ClientError(502, 'HTTP_ERROR', 'HTTP 502 Bad Gateway', null, null, null, '<html>Bad gateway</html>'), TEXTS);
    expect(err).toMatchObject({ status: 502, code: 'INTERNAL_ERROR', message: FALLBACK, issues: [] });
  });

  it('makes no connection and no answer in time a network error in Spanish', () => {
    expect(consoleError(new TypeError('Failed to fetch'), TEXTS)).toMatchObject({ status: 0, code: 'NETWORK_ERROR', message: TEXTS.networkError });
    expect(consoleError(new TimeoutError('no answer'), TEXTS)).toMatchObject({ status: 0, code: 'NETWORK_ERROR', message: TEXTS.networkError });
  });

  it('leaves an error of the console as it is', () => {
    const own = new ApiError(404, 'NOT_FOUND', 'No encontrado');
    expect(consoleError(own, TEXTS)).toBe(own);
  });
});
