/** POST /v1/admin/gc (src/maintenance/gc.ts), GET /v1/export (export.ts), POST /v1/admin/backup (backup.ts). */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Database } from '../../db/types.ts';
import type { ObjectStore } from '../../files/object-store.ts';
import path from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import type { ServerConfig } from '../../config/server.ts';
import { BackupAborted, backupPreflight, writeBackup } from '../../maintenance/backup.ts';
import { exportNdjson } from '../../maintenance/export.ts';
import { collectGarbage } from '../../maintenance/gc.ts';
import { ROUTES } from '../../schemas/routes.ts';
import { ConflictError } from '../../util/errors.ts';

export interface MaintenanceOptions {
  db: Database;
  config: ServerConfig;
  /** The object store and its largest object; absent when the gateway stores no files (no backup then). */
  files?: { store: ObjectStore; maxObjectBytes: number };
}

export const maintenanceRoutes: FastifyPluginAsyncTypebox<MaintenanceOptions> = async (app, { db, config, files }) => {
  const store = files?.store;
  app.route({
    ...ROUTES.collectGarbage,
    handler: async (req) => {
      const body = req.body ?? {};
      const grace = body.grace_seconds;
      const result = await collectGarbage(db, store, {
        dryRun: body.dry_run ?? false,
        dataDir: config.dataDir,
        graceMs: grace === undefined ? undefined : grace * 1000,
      });
      req.log.info(result, 'garbage collected');
      return result;
    },
  });

  app.route({
    ...ROUTES.exportNdjson,
    handler: async (_req, reply) => {
      reply.header('content-type', 'application/x-ndjson; charset=utf-8');
      reply.header('content-disposition', 'attachment; filename="memex-export.ndjson"');
      return reply.send(Readable.from(exportNdjson(db, files ? { store: files.store, maxObjectBytes: files.maxObjectBytes } : {}), { objectMode: false, highWaterMark: 64 * 1024 }) as any);
    },
  });

  app.route({
    ...ROUTES.backup,
    handler: async (req, reply) => {
      if (!files) throw new ConflictError('this gateway has no object store configured; back up from memex serve');
      const source = {
        db,
        store: files.store,
        maxObjectBytes: files.maxObjectBytes,
      };
      backupPreflight(source); // a BackupError is a 409 through the shared error mapping
      // From here the answer is a stream: a failure part-way cuts it short, and the file has no
      // end member, so `memex backup` discards it and `memex restore` refuses it.
      const out = new PassThrough();
      writeBackup(source, out).then(
        (m) => req.log.info({ objects: m.objects, documents: m.documents }, 'backup written'),
        (err: Error) => {
          // A client that went away (curl -m, Ctrl-C, a proxy's timeout) costs only its own request.
          if (err instanceof BackupAborted) req.log.info('backup abandoned: the client went away');
          else req.log.error({ err: { message: err.message } }, 'backup failed');
          out.destroy(err);
        },
      );
      reply.header('content-type', 'application/x-tar');
      reply.header('content-disposition', 'attachment; filename="memex-backup.tar"');
      return reply.send(out as any);
    },
  });
};
