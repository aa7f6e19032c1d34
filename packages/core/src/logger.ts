import winston from 'winston';

export type Logger = winston.Logger;

/** Structured JSON logs; children carry `request_id`, `service`, … on every line. */
export function createLogger(options: { level?: string; service: string; silent?: boolean }): Logger {
  return winston.createLogger({
    level: options.level ?? 'info',
    silent: options.silent ?? false,
    defaultMeta: { service: options.service },
    format: winston.format.combine(winston.format.timestamp(), winston.format.errors({ stack: true }), winston.format.json()),
    transports: [new winston.transports.Console()],
  });
}
