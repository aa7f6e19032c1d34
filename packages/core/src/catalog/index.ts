export * from './schemas';
export * from './folders';
export * from './processes';
export * from './machines';
export * from './queues';
export * from './assets';
export * from './asset-read';
export * from './write';
