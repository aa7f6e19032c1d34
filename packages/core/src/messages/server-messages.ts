import type { ErrorCode } from '../errors';

/**
 * Every text of the server a person reads, in Spanish: the `message` of error envelopes, the
 * field messages of 422s, the texts written on jobs, items and schedules, scope descriptions and
 * the few server-rendered pages. Code refers to these entries and never spells a text itself
 * (test/messages-catalogue.test.ts fails on a Spanish literal outside this file). The texts are
 * part of the public contract: change one only on purpose, never as a side effect of a refactor.
 * Logs and developer errors stay in English and are not here. The console has its own catalogue
 * (apps/console/src/i18n/es.ts).
 */
export const es = {
  locale: 'es',

  /** The default `message` of each error code (errors.ts, the error middleware, the OpenAPI document). */
  errors: {
    UNAUTHORIZED: 'Credenciales inválidas',
    FORBIDDEN: 'Permisos insuficientes',
    NOT_FOUND: 'Recurso no encontrado',
    CONFLICT: 'El recurso ya existe',
    PAYLOAD_TOO_LARGE: 'El cuerpo de la solicitud supera el tamaño máximo permitido',
    VALIDATION_ERROR: 'Error de validación',
    RATE_LIMIT_EXCEEDED: 'Límite de solicitudes excedido',
    QUOTA_EXCEEDED: 'Cuota mensual de ejecuciones agotada',
    NO_MACHINE_AVAILABLE: 'No hay ninguna máquina en línea y activa disponible',
    HTTP_ERROR: 'Error HTTP',
    INTERNAL_ERROR: 'Error interno del servidor',
  } satisfies Record<ErrorCode, string>,

  /** HTTP plumbing: routing, bodies, streams, the server's own state. */
  http: {
    routeNotFound: 'Ruta no encontrada',
    methodNotAllowed: 'Método no permitido',
    methodNotImplemented: 'Método no implementado',
    bodyNotJson: 'El cuerpo no es un JSON válido',
    malformedJson: 'JSON mal formado',
    bodyUndecodable: 'el cuerpo no se pudo decodificar',
    contentTypeNotJson: 'El cuerpo debe ser JSON (Content-Type: application/json)',
    encodingUnsupported: 'Codificación de contenido no soportada',
    requestAborted: 'La solicitud se interrumpió antes de terminar el cuerpo',
    webSocketOnly: 'Este recurso se abre como WebSocket (Upgrade: websocket)',
    serverStopping: 'El servidor se está deteniendo',
    databaseUnavailable: 'La base de datos no responde: vuelve a intentarlo',
    tooManyStreamsPerUser: 'Demasiados streams de eventos abiertos por este usuario',
    tooManyStreamsPerWorkspace: 'Demasiados streams de eventos abiertos en este workspace',
    consoleNotBuilt:
      'La consola no está compilada en este servidor: ejecute `node apps/console/build.mjs` (npm start y npm test lo hacen solos).',
    metricsTokenInvalid: 'Token de métricas inválido',
  },

  /** Credentials: access tokens, API keys, sign-in. */
  auth: {
    accessTokenExpired: 'Token de acceso expirado',
    accessTokenNotFound: 'Token de acceso no encontrado',
    adminRequired: 'Se requiere el rol de administrador del workspace',
    apiKeyExpired: 'API key expirada',
    apiKeyRevokedCannotRotate: 'La API key está revocada y no se puede rotar',
    ipNotAllowed: 'IP no autorizada',
    missingScope: (scope: string) => `La API key no tiene el scope requerido: ${scope}`,
    signInBlocked: 'Demasiados intentos de inicio de sesión; espera antes de reintentar',
    /** Field messages (422). */
    ttlOutOfRange: (min: number, max: number) => `debe ser un entero entre ${min} y ${max} segundos`,
    nameTooShort: 'debe tener al menos 2 caracteres que no sean espacios',
    mustBeFutureDate: 'debe ser una fecha futura',
  },

  /** The descriptions of the API key scopes (GET /settings/api-keys/available-scopes). */
  scopes: {
    'assets:read': 'Leer assets',
    'queues:read': 'Leer elementos de colas',
    'queues:write': 'Añadir elementos a colas',
    'jobs:read': 'Leer el estado de ejecuciones',
    'jobs:write': 'Lanzar ejecuciones',
    'jobs:stop': 'Detener ejecuciones',
    'processes:read': 'Leer procesos',
    'machines:read': 'Leer máquinas',
  },

  users: {
    notFound: 'Usuario no encontrado',
    notFoundNamed: (idOrEmail: string) => `Usuario no encontrado: ${idOrEmail}`,
    inactive: 'El usuario está desactivado',
    emailTaken: 'Ya existe un usuario con ese email',
    lastAdmin: 'No se puede quitar el rol ni desactivar al último administrador activo del workspace',
    mustChangePassword: 'Debes cambiar tu contraseña antes de continuar',
    wrongCurrentPassword: 'La contraseña actual no es correcta',
    samePassword: 'debe ser distinta de la contraseña actual',
    commonPassword: 'es una contraseña demasiado común; elige otra',
    emptyUpdate: 'indica al menos un campo: role o name',
  },

  tenants: {
    notFound: 'Tenant no encontrado',
    notFoundNamed: (idOrName: string) => `Tenant no encontrado: ${idOrName}`,
    nameTaken: 'Ya existe un tenant con ese nombre',
    featureNotInPlan: (feature: string) => `El plan no incluye la funcionalidad ${feature}`,
    subscriptionInactive: 'La suscripción del workspace no está activa',
  },

  /** Folders, processes, queues, machines, assets and their references. */
  catalog: {
    folderNotInWorkspace: 'La carpeta no existe en este workspace',
    processNotInWorkspace: 'El proceso no existe en este workspace',
    queueNotInWorkspace: 'La cola no existe en este workspace',
    machineNotInWorkspace: 'La máquina no existe en este workspace',
    chainCycle: 'El encadenamiento formaría un ciclo: el proceso acabaría lanzándose a sí mismo',
    environmentDenied: (environment: string) => `La API key no tiene acceso al entorno ${environment}`,
    machineEnvironmentDenied: (environment: string) => `La máquina no tiene acceso al entorno ${environment}`,
    machineEnvironmentRequired: (allowed: string) => `Indica el entorno: la máquina puede leer ${allowed}`,
    noEnvironment: 'La API key no tiene acceso a ningún entorno',
    environmentRequired: (allowed: string) => `Indica el entorno: la API key puede leer ${allowed}`,
    assetHasNoValue: (name: string, environment: string) => `El asset ${name} no tiene valor en el entorno ${environment}`,
  },

  /** Queues and their items. */
  queues: {
    queueNotFound: 'Cola no encontrada',
    itemNotFound: 'Elemento no encontrado',
    itemNotPendingReview: (status: string) => `El elemento no está pendiente de revisión (estado: ${status})`,
    rejectedInReview: 'Rechazado en la revisión humana',
    dateOutOfRange: 'la fecha está fuera del rango admitido (años 0001 a 9999)',
    nulCharacter: 'no puede contener el carácter \\u0000',
    /** Written on the items of a job that ended without closing them. */
    consumerEndedWithoutClosing: 'El trabajo consumidor terminó sin cerrar el elemento',
    robotLost: 'El robot que procesaba el elemento dejó de responder (su job terminó sin cerrarlo)',
    jobTimedOut: 'El job que procesaba el elemento superó su tiempo máximo de ejecución',
    machineLost: (name: string) => `La máquina ${name} dejó de responder mientras procesaba el elemento`,
    runStalled: (name: string) => `El job que procesaba el elemento dejó de avanzar en la máquina ${name}`,
    stoppedWhileWaiting: 'El job se detuvo mientras esperaba una respuesta',
    referenceTaken: 'Ya existe un elemento con esta referencia en la cola',
    referencesTakenInBulk: (count: number) =>
      count === 1 ? 'Un elemento repite una referencia que ya existe en la cola o en la solicitud; no se añadió ninguno'
        : `${count} elementos repiten referencias que ya existen en la cola o en la solicitud; no se añadió ninguno`,
    duplicateReferencesHeld: (references: number, items: number) =>
      `La cola ya tiene ${items} elementos que comparten ${references} ${references === 1 ? 'referencia' : 'referencias'}; no se pueden exigir referencias únicas`,
  },

  jobs: {
    notFound: 'Job no encontrado',
    processNotFound: 'Proceso no encontrado',
    machineNotFound: 'Máquina no encontrada',
    webhookMachineInvalid: 'La máquina no existe en este workspace o no está activa',
    notAProcessOfWorkspace: 'no es un proceso de este espacio de trabajo',
    notAMachineOfWorkspace: 'no es una máquina de este espacio de trabajo',
    alreadyEnded: (status: string) => `El job ya ha finalizado (estado: ${status})`,
    notWaitingInput: (status: string) => `El job no está esperando una respuesta (estado: ${status})`,
    changedDuringRequest: 'El job cambió de estado durante la solicitud; inténtalo de nuevo',
    staleAttempt: 'Este intento del job ya no es el vigente',
    stopRequested: 'Se pidió detener el job',
    consumesNoQueue: 'Este job no consume ninguna cola',
    /** error_message of jobs ended by the dispatcher's sweeps (built in SQL with sqlFormat). */
    timedOut: (seconds: number | string) => `Tiempo de ejecución agotado: superó timeout_seconds (${seconds} s)`,
    machineOfflineBeforeConsumer: (machine: string) => `La máquina ${machine} quedó fuera de línea antes de iniciar el consumidor de la cola`,
    machineStoppedHeartbeats: (machine: string) => `La máquina ${machine} dejó de enviar latidos mientras ejecutaba el job`,
    leaseLapsed: (machine: string) => `El job dejó de avanzar en la máquina ${machine}: su agente no renovó la concesión a tiempo`,
    agentRestarted: (machine: string) => `El agente de la máquina ${machine} se reinició mientras ejecutaba el job`,
  },

  /** Bulk actions by filter (bulk/). */
  bulk: {
    notFound: 'Acción masiva no encontrada',
    filterOrIds: 'indique un filtro (filter) o una lista de ids (ids), no ambos',
    filterTooLarge: (max: number) => `el filtro no puede superar ${max} caracteres en JSON`,
    priorityRequired: 'obligatorio para la acción set_priority',
    postponeRequired: 'obligatorio para la acción postpone (una fecha, o null para quitar el aplazamiento)',
    notForAction: (action: string) => `no se admite con la acción ${action}`,
    createdRange: 'created_after debe ser anterior a created_before',
    businessNeedsInclude: 'las excepciones de negocio no se reintentan salvo que se pida: indique include_business: true',
    alreadyEnded: (status: string) => `La acción masiva ya ha finalizado (estado: ${status})`,
    interrupted: 'La acción masiva se interrumpió por un error; se reanudará desde el último bloque confirmado',
  },

  /** input_data against a process's input_schema (triggers). */
  inputData: {
    required: 'El proceso requiere input_data según su schema',
    invalidPrefix: 'input_data no cumple el schema del proceso:',
    andMore: '; (y más)',
    schemaUnusable: (problem: string) => `el input_schema del proceso no se puede usar (${problem}); corríjalo en la configuración del proceso`,
    timeLimit: (ms: number) => `la validación superó su tiempo máximo (${ms} ms): el input_schema del proceso es demasiado costoso para estos datos`,
    tooDeep: 'input_data está demasiado anidado para validarlo con el input_schema del proceso',
    couldNotValidate: 'no se pudo validar input_data con el input_schema del proceso',
  },

  /** A job asking a person for input, and the answer (docs/decisions/human-input.md). */
  humanInput: {
    promptEmpty: 'debe ser un texto no vacío',
    atMostCharacters: (max: number) => `admite como máximo ${max} caracteres`,
    optionsShape: 'debe ser {"choices": [...]} o {"schema": {...}}',
    optionsOneKey: 'debe tener exactamente una clave: choices o schema',
    moreThanBytes: (max: number) => `ocupa más de ${max} bytes`,
    choicesEmpty: 'debe ser una lista no vacía',
    atMostChoices: (max: number) => `admite como máximo ${max} opciones`,
    repeatedChoice: 'opción repetida',
    notAChoice: 'no es una de las opciones ofrecidas (pending_input_options.choices)',
    questionSchemaUnusable: (problem: string) => `el schema de la pregunta no se puede usar (${problem})`,
    overBudget: 'la validación superó su presupuesto: el valor es demasiado costoso de validar',
    couldNotValidate: 'no se pudo validar el valor con el schema de la pregunta',
    notValid: 'no válido',
    schemaMismatch: (where: string, problem: string) => `no cumple el schema de la pregunta (${where}${problem})`,
  },

  logs: {
    truncatedMarker: (mib: number) => `… (registro truncado: superó ${mib} MiB; se descartaron las líneas siguientes)\n`,
    trimmedHeader: (start: number, total: number) =>
      `… (registro recortado: se omiten los primeros ${start} de ${total} bytes; el texto completo en GET /api/v1/settings/jobs/{job_id}/logs)\n`,
    appendTooLong: (kib: number) => `supera ${kib} KiB por envío`,
    seqNotPositive: 'debe ser un entero positivo',
  },

  schedules: {
    unknownTimezone: 'Zona horaria desconocida: use un nombre IANA como Europe/Madrid o UTC',
    invalidCron: (reason: string) => `Expresión cron no válida: ${reason}`,
    cronTooLong: (max: number) => `como máximo ${max} caracteres`,
    questionMarkNotSupported: '"?" no está admitido',
    neverRuns: 'no se ejecutaría nunca',
    /** last_error of a schedule whose tick was refused. */
    refused: {
      quota_exceeded: 'Cuota mensual de ejecuciones agotada',
      no_machine: 'No hay ninguna máquina disponible',
      process_inactive: 'El proceso no existe o no está activo',
      subscription_inactive: 'La suscripción del workspace no está activa',
      invalid_cron: 'La expresión cron o la zona horaria ya no son válidas',
    },
  },

  idempotency: {
    keyFormat: (max: number) => `debe tener entre 1 y ${max} caracteres ASCII imprimibles`,
    reusedField: 'la Idempotency-Key ya se usó con otra solicitud (otro cuerpo u otro destino)',
    reused: 'La Idempotency-Key ya se usó con una solicitud distinta',
    inProgress: 'Una solicitud con la misma Idempotency-Key todavía está en curso',
    claimedByOther: 'La Idempotency-Key fue reclamada por otra solicitud',
  },

  /** Cursors and filters of the audit log and the event feed. */
  feeds: {
    notAnAuditCursor: 'no es un cursor de esta lista (usa meta.next_cursor de la página anterior)',
    untilBeforeSince: 'debe ser igual o posterior a since',
    notAnEventIdHint: 'no es un id de evento (usa el id de un evento o meta.next_cursor)',
    notAnEventId: 'no es un id de evento',
    unknownEventType: (type: string) => `tipo de evento desconocido: ${type}`,
  },

  webhooks: {
    tooMany: (max: number) => `El espacio de trabajo ya tiene ${max} webhooks, el máximo; elimina alguno antes de crear otro`,
    notFound: 'Webhook no encontrado',
    deliveryNotFound: 'Entrega no encontrada',
    eventNoLongerKept: 'El evento de esta entrega ya no se conserva (retención de eventos)',
    urlInvalid: 'no es una URL válida',
    urlHttpsOrHttp: 'la URL debe usar https o http',
    urlHttps: 'la URL debe usar https',
    urlCredentials: 'la URL no puede llevar credenciales',
    urlPrivate: 'la URL apunta a una red privada o local',
  },

  security: {
    invalidIpOrCidr: 'Dirección IP o rango CIDR inválido',
    invalidCidrPrefix: 'Prefijo CIDR inválido',
  },

  /** Field messages of the JSON input checks and of user-supplied JSON Schemas. */
  /** The streaming exports (docs/decisions/export.md). */
  export: {
    includeArchived: 'debe ser true o false',
    archiveNotConfigured: 'Este servidor no tiene un archivo configurado (ARCHIVE_DIR o ARCHIVE_S3_BUCKET): no puede incluir los registros archivados. ' +
      'Repite la exportación sin include_archived o configura el archivo.',
  },

  validation: {
    invalidValue: 'valor inválido',
    containmentFilter: 'debe ser un objeto JSON codificado en la URL, por ejemplo {"cliente":"ACME"}',
    jsonTooDeep: 'el JSON está demasiado anidado',
    nulCharacter: 'no puede contener el carácter nulo (U+0000)',
    loneSurrogate: 'no puede contener un carácter sustituto UTF-16 sin pareja (U+D800 a U+DFFF)',
    fieldName: (problem: string) => `el nombre del campo ${problem}`,
    fieldNameForbidden: 'nombre de campo no permitido',
    nestedTooDeep: (max: number) => `no puede anidar objetos o listas a más de ${max} niveles`,
    schemaNotAnObject: 'input_schema no es un JSON Schema válido: debe ser un objeto JSON Schema',
    schemaInvalid: (problem: string) => `input_schema no es un JSON Schema válido: ${problem}`,
    schemaOverLimit: (what: string, actual: number, max: number) => `input_schema supera el límite de ${what}: ${actual} (máximo ${max})`,
    schemaTooDeep: (max: number) => `input_schema supera el límite de anidamiento: más de ${max} niveles`,
    /** The `what` of schemaOverLimit. */
    limitBytes: 'tamaño en bytes',
    limitSubschemas: 'subesquemas',
    limitPatterns: 'patrones (pattern y patternProperties)',
    patternNotSupported: (reason: string) => `patrón no admitido: ${reason}`,
    idOnlyAtRoot: '$id solo se admite en la raíz del schema',
    refNotSupported: 'referencia no admitida: solo se admiten referencias locales (# o #/…) a un subesquema del mismo input_schema',
    patternTooLong: (length: number, max: number) => `el patrón tiene ${length} caracteres (máximo ${max})`,
    patternLookaround: 'las aserciones lookahead / lookbehind ((?=…), (?!…), (?<=…), (?<!…)) no están admitidas',
    patternBackreference: 'las referencias hacia atrás (\\1, \\k<nombre>) no están admitidas',
    patternSyntax: (problem: string) => `sintaxis no admitida por el motor de expresiones regulares (RE2): ${problem}`,
    patternTooComplex: (size: number, max: number) => `el patrón es demasiado complejo: ${size} instrucciones (máximo ${max})`,
  },

  /** The machine protocol (WebSocket): close reasons and request errors. */
  agent: {
    reconnected: 'la máquina se conectó de nuevo',
    keyNoLongerValid: 'la clave de la máquina ya no es válida',
    textJsonOnly: 'solo mensajes de texto JSON',
    tooManyMessages: 'demasiados mensajes',
    sessionFailed: 'no se pudo iniciar la sesión',
    serverStopping: 'el servidor se detiene',
    notJson: 'no es JSON válido',
    notAnInteger: 'debe ser un número entero',
    oneOf: (values: string) => `debe ser uno de: ${values}`,
    tooManyMessagesPerSecond: 'Demasiados mensajes por segundo en esta conexión',
    connectionClosed: 'la conexión se cerró',
    tooLarge: (max: number) => `demasiado grande: como máximo ${max} bytes en JSON`,
    exceptionOnlyOnFailure: 'solo se indica con status "failed": un resultado correcto no tiene tipo de excepción',
    tooManyRequestsInFlight: (max: number) => `Demasiadas peticiones sin responder en esta conexión (máximo ${max}): espere las respuestas`,
  },

  /** Server-rendered pages. */
  pages: {
    boardNeedsSession: (minutes: number) => `<!doctype html>
<html lang="es">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="robots" content="noindex"><title>Bull Board · svc</title></head>
<body>
<h1>Bull Board necesita una sesión</h1>
<p>Abra Bull Board desde la consola con un usuario administrador (botón «Colas (Bull Board)»). La sesión dura ${minutes} minutos y termina al cerrar la sesión de la consola.</p>
<p><a href="/console/">Ir a la consola</a></p>
</body>
</html>
`,
  },

  /** The CLI's workspace file (svc apply). */
  cli: {
    duplicateName: (kind: string, first: string | number) => `nombre repetido (ya en ${kind} → ${first})`,
    envNameRequired: '$env debe nombrar una variable de entorno',
    envPrefix: (prefix: string, name: string) => `$env solo puede leer variables que empiezan por ${prefix} (p. ej. ${prefix}ERP_PASSWORD), no ${name}`,
    envUndefined: (name: string) => `la variable de entorno ${name} no está definida`,
    folderUnknown: (name: string) => `La carpeta "${name}" no existe en el fichero ni en el workspace`,
    processUnknown: (name: string) => `El proceso "${name}" no existe en el fichero ni en el workspace`,
    machineUnknown: (name: string) => `La máquina "${name}" no existe en el fichero ni en el workspace`,
    scheduleNeedsProcess: 'El proceso es obligatorio para crear una programación',
    scheduleNeedsCron: 'La expresión cron es obligatoria para crear una programación',
    assetNeedsType: 'El tipo es obligatorio para crear un asset (text, integer, boolean, credential)',
  },
} as const;

export type ServerMessages = typeof es;

/**
 * A one-parameter message as a Postgres `format()` template, for texts built per row in SQL
 * (`format(${sqlFormat(es.jobs.agentRestarted)}, m.name)`): the same words, one place.
 */
export function sqlFormat(message: (arg: string) => string): string {
  const hole = '\u0000';
  return message(hole).replace(/%/g, '%%').split(hole).join('%s');
}
