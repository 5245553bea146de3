import { OpenAPIRegistry, OpenApiGeneratorV31, extendZodWithOpenApi } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
import { ERROR_STATUS } from '../domain/errors';

extendZodWithOpenApi(z);

export { z };

export const ErrorBody = z
  .object({
    error: z.enum(Object.keys(ERROR_STATUS) as [keyof typeof ERROR_STATUS, ...(keyof typeof ERROR_STATUS)[]]),
    message: z.string(),
    requestId: z.string(),
    retryable: z.boolean(),
    details: z.record(z.string(), z.unknown()).optional(),
  })
  .openapi('Error');

export function createRegistry(): OpenAPIRegistry {
  const registry = new OpenAPIRegistry();
  registry.register('Error', ErrorBody);
  registry.registerComponent('securitySchemes', 'bearer', { type: 'http', scheme: 'bearer' });
  return registry;
}

export function openApiDocument(registry: OpenAPIRegistry, serverUrl: string) {
  return new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: '3.1.0',
    info: { title: 'Wholesale code-purchase API', version: '1.4.0' },
    servers: [{ url: serverUrl }],
    security: [{ bearer: [] }],
  });
}
