/**
 * The agent's calls to the relay (docs/API.md, "Registration and agent calls" and "Agent values"). Every JSON
 * answer is checked against its shared/api schema before the agent acts on it (RELAY_BAD_RESPONSE otherwise).
 */
import type { TSchema } from '@sinclair/typebox';
import { AgentInfo, Unjoined } from '../../shared/api/agent-info.js';
import { checkedBody } from '../../shared/api/checked-body.js';
import { type LeaseBody, LeaseReply } from '../../shared/api/lease.js';
import { type RegisterBody, RegisterReply } from '../../shared/api/registration.js';
import type { CallOptions, RelayClient } from '../../shared/kit/http/client.js';
import type { Values } from '../../shared/kit/values/deep-merge.js';
import { parseValuesYaml } from '../../shared/kit/values/values-file.js';

export class AgentApi {
  readonly #client: RelayClient;
  readonly #credential: string | undefined;

  /** `credential` is the agent credential (tac_...); register() takes its bootstrap secret itself. */
  constructor(client: RelayClient, credential?: string) {
    this.#client = client;
    this.#credential = credential;
  }

  withCredential(credential: string): AgentApi {
    return new AgentApi(this.#client, credential);
  }

  /** POST /api/v1/register with a cluster PSK or a bootstrap access key. */
  register(bootstrapSecret: string, body: RegisterBody): Promise<RegisterReply> {
    return this.#call(RegisterReply, 'POST', '/api/v1/register', { body, token: bootstrapSecret });
  }

  /** GET /api/v1/agent: the registration's status (403 CLUSTER_DENIED once denied). */
  info(): Promise<AgentInfo> {
    return this.#call(AgentInfo, 'GET', '/api/v1/agent', { token: this.#need() });
  }

  lease(body: LeaseBody): Promise<LeaseReply> {
    return this.#call(LeaseReply, 'POST', '/api/v1/agent/lease', { body, token: this.#need() });
  }

  unjoin(): Promise<Unjoined> {
    return this.#call(Unjoined, 'DELETE', '/api/v1/agent', { token: this.#need() });
  }

  /** GET /clusters/:name (merged platform + cluster values) as a map. */
  async values(cluster: string): Promise<Values> {
    const text = await this.#client.text('GET', `/clusters/${encodeURIComponent(cluster)}`, {
      token: this.#need(),
      accept: 'text/yaml',
    });
    return parseValuesYaml(text, `values of cluster ${cluster} from the relay`);
  }

  async #call<T extends TSchema>(schema: T, method: string, path: string, opts: CallOptions) {
    const body = await this.#client.json<unknown>(method, path, opts);
    return checkedBody(schema, body, `${method} ${path}`);
  }

  #need(): string {
    if (!this.#credential) throw new Error('AgentApi: no agent credential');
    return this.#credential;
  }
}
