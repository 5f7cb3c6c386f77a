import { validate } from './checks';
import { NetworkPolicyPortJson } from '../api/network-policy-defaults';
import { propName } from '../api/spelling';

/** A port, or range of ports, of a network rule. */
export class SandboxNetworkPort {
  /** One TCP port. */
  public static tcp(port: number): SandboxNetworkPort {
    return SandboxNetworkPort.checked('tcp', 'TCP', port);
  }

  /** One UDP port. */
  public static udp(port: number): SandboxNetworkPort {
    return SandboxNetworkPort.checked('udp', 'UDP', port);
  }

  /** TCP ports `startPort` to `endPort`, both included (needs Kubernetes 1.25+ for `endPort`). */
  public static tcpRange(startPort: number, endPort: number): SandboxNetworkPort {
    return SandboxNetworkPort.checked('tcpRange', 'TCP', startPort, endPort);
  }

  /** Every TCP port. */
  public static allTcp(): SandboxNetworkPort {
    return new SandboxNetworkPort({ protocol: 'TCP' });
  }

  /** Every UDP port. */
  public static allUdp(): SandboxNetworkPort {
    return new SandboxNetworkPort({ protocol: 'UDP' });
  }

  private static checked(factory: string, protocol: string, port: number, endPort?: number): SandboxNetworkPort {
    validate('SandboxNetworkPort', factory, (errors) => {
      errors.prop(endPort === undefined ? 'port' : 'startPort', checkPortNumber(port));
      if (endPort !== undefined) {
        errors.prop('endPort', checkPortNumber(endPort));
        if (endPort < port) errors.prop('endPort', `${endPort} is below ${propName('startPort')} ${port}; give the lower port first, e.g. 8000 then 8080`);
      }
    });
    return new SandboxNetworkPort({ protocol, port, ...(endPort !== undefined ? { endPort } : {}) });
  }

  private constructor(private readonly port: NetworkPolicyPortJson) {}

  /** @internal The networking/v1 NetworkPolicyPort. */
  public _toKube(): NetworkPolicyPortJson {
    return { ...this.port };
  }
}

function checkPortNumber(port: number): string | undefined {
  return Number.isInteger(port) && port >= 1 && port <= 65535 ? undefined : `${port} is not a port; use an integer from 1 to 65535, e.g. 443`;
}
