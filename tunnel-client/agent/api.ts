/** The agent's calls to the relay (docs/API.md, "Registration and agent calls" and "Agent values"). */
import type { RelayClient } from '../../shared/kit/http/client.js';
import type { Values } from '../../shared/kit/values/deep-merge.js';
import { parseValuesYaml } from '../../shared/kit/values/values-file.js';
import type { AgentInfo, LeaseRequest, LeaseResponse, RegisterRequest, RegisterResponse } from './types.js';

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
  register(bootstrapSecret: string, body: RegisterRequest): Promise<RegisterResponse> {
    return this.#client.json<RegisterResponse>('POST', '/api/v1/register', { body, token: bootstrapSecret });
  }

  /** GET /api/v1/agent: the registration's status (403 CLUSTER_DENIED once denied). */
  info(): Promise<AgentInfo> {
    return this.#client.json<AgentInfo>('GET', '/api/v1/agent', { token: this.#need() });
  }

  lease(body: LeaseRequest): Promise<LeaseResponse> {
    return this.#client.json<LeaseResponse>('POST', '/api/v1/agent/lease', { body, token: this.#need() });
  }

  unjoin(): Promise<{ unjoined: string }> {
    return this.#client.json<{ unjoined: string }>('DELETE', '/api/v1/agent', { token: this.#need() });
  }

  /** GET /clusters/:name (merged platform + cluster values) as a map. */
  async values(cluster: string): Promise<Values> {
    const text = await this.#client.text('GET', `/clusters/${encodeURIComponent(cluster)}`, {
      token: this.#need(),
      accept: 'text/yaml',
    });
    return parseValuesYaml(text, `values of cluster ${cluster} from the relay`);
  }

  #need(): string {
    if (!this.#credential) throw new Error('AgentApi: no agent credential');
    return this.#credential;
  }
}
