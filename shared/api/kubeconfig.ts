/** POST /api/v1/clusters/NAME/kubeconfig: a kubeconfig with a new access key of the cluster, valid for `ttl`. */
import { type Static, Type } from '@sinclair/typebox';
import { closed, DurationText } from './schema-parts.js';

export const KubeconfigBody = Type.Object({ ttl: Type.Optional(DurationText) }, closed);
export type KubeconfigBody = Static<typeof KubeconfigBody>;

export const MintedKubeconfig = Type.Object(
  {
    keyId: Type.String(),
    role: Type.String(),
    expiresAt: Type.String(),
    context: Type.String(),
    kubeconfig: Type.Record(Type.String(), Type.Unknown()),
  },
  closed,
);
export type MintedKubeconfig = Static<typeof MintedKubeconfig>;
