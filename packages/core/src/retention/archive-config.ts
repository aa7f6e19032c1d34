import type { ArchiveSettings } from '../config';
import { directoryArchive, type RecordArchive } from './archive';
import { s3Archive } from './s3-archive';

/**
 * The retention archive the configuration names (config.ts `parseArchiveSettings`), or null when
 * it names none: the one place the dispatcher (which writes) and the CLI (which restores) build it.
 */
export function recordArchiveFromConfig(settings: ArchiveSettings | null): RecordArchive | null {
  if (!settings) return null;
  if (settings.kind === 'directory') return directoryArchive(settings.dir);
  return s3Archive({ bucket: settings.bucket, prefix: settings.prefix, endpoint: settings.endpoint, region: settings.region });
}
