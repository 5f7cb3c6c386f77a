"""Use the Python package that jsii-pacmak built: synthesize a chart and check the manifests.

Run by test/bindings/run.sh inside a fresh virtualenv that has only the built wheel and its
dependencies from PyPI installed. Exits non-zero on the first failed check.
"""
import json
import sys
from importlib.metadata import version

import cdk8s
from cdk8s_agent_sandbox import (
    AgentSandboxSystem,
    EnvVarsInjectionPolicy,
    IdlePolicy,
    NameHash,
    ObjectRef,
    SandboxClaim,
    SandboxContainerProps,
    SandboxCrds,
    SandboxRuntimeClass,
    SandboxRuntimeOptions,
    SandboxTemplate,
    SandboxWarmPool,
)

checks = 0


def check(condition, message):
    global checks
    checks += 1
    if not condition:
        print(f"FAIL: {message}")
        sys.exit(1)
    print(f"ok: {message}")


app = cdk8s.App()
chart = cdk8s.Chart(app, "python-smoke", namespace="agents", disable_resource_name_hashes=True)
gvisor = SandboxRuntimeClass.gvisor(chart, "gvisor")
template = SandboxTemplate(
    chart,
    "template",
    metadata=cdk8s.ApiObjectMetadata(name="python"),
    runtime_class=gvisor,
    containers=[SandboxContainerProps(image="python:3.12-slim", command=["sleep", "infinity"])],
    env_vars_injection_policy=EnvVarsInjectionPolicy.ALLOWED,
)
pool = SandboxWarmPool(chart, "pool", metadata=cdk8s.ApiObjectMetadata(name="python"), template=template, replicas=2)
SandboxClaim(chart, "claim", metadata=cdk8s.ApiObjectMetadata(name="task"), warm_pool=pool)

manifests = {m["kind"]: m for m in chart.to_json()}
check(set(manifests) == {"RuntimeClass", "SandboxTemplate", "SandboxWarmPool", "SandboxClaim"}, f"kinds synthesized: {sorted(manifests)}")
spec = manifests["SandboxTemplate"]["spec"]["podTemplate"]["spec"]
check(spec["runtimeClassName"] == "gvisor", "template uses the gVisor RuntimeClass")
check(spec["automountServiceAccountToken"] is False, "secure default: no service-account token")
check(spec["containers"][0]["securityContext"]["capabilities"]["drop"] == ["ALL"], "secure default: ALL capabilities dropped")
check(manifests["SandboxWarmPool"]["spec"] == {"replicas": 2, "sandboxTemplateRef": {"name": "python"}}, "pool references the template")
check(manifests["SandboxClaim"]["spec"] == {"warmPoolRef": {"name": "python"}}, "claim references the pool")
check(NameHash.of("my-sandbox") == "374de8f5", "name hash matches the upstream vector")

# The runtime injected into a stock image, as in README.md's Python install and docs/constructs.md.
injected = cdk8s.Chart(cdk8s.App(), "injected")
SandboxTemplate(
    injected,
    "template",
    metadata=cdk8s.ApiObjectMetadata(name="python"),
    containers=[SandboxContainerProps(image="python:3.12-slim")],
    runtime=SandboxRuntimeOptions(files_port=8080, exec_timeout=cdk8s.Duration.minutes(2)),
)
pod = injected.to_json()[0]["spec"]["podTemplate"]["spec"]
check(pod["containers"][0]["command"] == [
    "/opt/agent-sandbox/bin/node", "/opt/agent-sandbox/bin/agent-sandbox-operator.mjs", "runtime",
    "--port=8888", "--workspace=/workspace", "--files-port=8080", "--exec-timeout=120",
], "runtime: the injected command line")
check(pod["initContainers"][0]["args"] == ["install-runtime", "/opt/agent-sandbox/bin"], "runtime: the install init container")

# Validation errors cross the language boundary with the field and the fix.
# A separate App: synthesizing any chart validates its whole App.
bad = cdk8s.Chart(cdk8s.App(), "bad")
SandboxClaim(bad, "claim", warm_pool=SandboxWarmPool.from_name("p", SandboxTemplate.from_name("t")), lifecycle={"shutdown_time": "tomorrow"})
try:
    bad.to_json()
    check(False, "an invalid shutdown time is rejected")
except Exception as error:  # jsii raises a JSIIError / RuntimeError carrying the JS message
    # The prop as Python spells it (lifecycle.shutdown_time), not as TypeScript does.
    check("lifecycle.shutdown_time:" in str(error) and "RFC 3339" in str(error), "an invalid shutdown time is rejected naming the field")
    check("shutdownTime" not in str(error), "the error does not use the TypeScript spelling")

# Interop: any construct wrapping an ApiObject of the right kind (cdk8s-plus, imported L1s, plain
# ApiObjects) is accepted where a name was; the wrong kind fails at synth naming the prop.
interop = cdk8s.Chart(cdk8s.App(), "interop", namespace="agents")
account = cdk8s.ApiObject(interop, "account", api_version="v1", kind="ServiceAccount", metadata=cdk8s.ApiObjectMetadata(name="agent"))
SandboxTemplate(
    interop,
    "template",
    metadata=cdk8s.ApiObjectMetadata(name="python"),
    containers=[SandboxContainerProps(image="python:3.12-slim")],
    service_account=ObjectRef.from_construct(account),
)
# The construct itself is accepted too, without ObjectRef.from_construct.
SandboxTemplate(
    interop,
    "direct",
    metadata=cdk8s.ApiObjectMetadata(name="direct"),
    containers=[SandboxContainerProps(image="python:3.12-slim")],
    service_account=account,
    image_pull_secrets=[ObjectRef.from_name("registry")],
)
templates = {m["metadata"]["name"]: m for m in interop.to_json() if m["kind"] == "SandboxTemplate"}
check(templates["python"]["spec"]["podTemplate"]["spec"]["serviceAccountName"] == "agent", "interop: a ServiceAccount construct gives serviceAccountName")
check(templates["direct"]["spec"]["podTemplate"]["spec"]["serviceAccountName"] == "agent", "interop: the ServiceAccount construct passed directly gives serviceAccountName")
check(templates["direct"]["spec"]["podTemplate"]["spec"]["imagePullSecrets"] == [{"name": "registry"}], "interop: an ObjectRef still works next to it")
wrong = cdk8s.Chart(cdk8s.App(), "wrong", namespace="agents")
config = cdk8s.ApiObject(wrong, "config", api_version="v1", kind="ConfigMap", metadata=cdk8s.ApiObjectMetadata(name="settings"))
SandboxTemplate(
    wrong,
    "template",
    metadata=cdk8s.ApiObjectMetadata(name="python"),
    containers=[SandboxContainerProps(image="python:3.12-slim")],
    service_account=ObjectRef.from_construct(config),
)
try:
    wrong.to_json()
    check(False, "interop: a ConfigMap given as the service account is rejected")
except Exception as error:
    check("service_account: " in str(error) and "ServiceAccount is expected" in str(error), "interop: the wrong kind is rejected naming the prop (as Python spells it) and the expected kind")
    check("ObjectRef.from_name" in str(error), "interop: the fix names ObjectRef.from_name")

# The wrong kind passed directly, and a value that is no reference at all.
direct_wrong = cdk8s.Chart(cdk8s.App(), "direct-wrong", namespace="agents")
settings = cdk8s.ApiObject(direct_wrong, "config", api_version="v1", kind="ConfigMap", metadata=cdk8s.ApiObjectMetadata(name="settings"))
SandboxTemplate(
    direct_wrong,
    "template",
    metadata=cdk8s.ApiObjectMetadata(name="python"),
    containers=[SandboxContainerProps(image="python:3.12-slim")],
    image_pull_secrets=[settings],
    idle_policy=IdlePolicy(suspend_after=cdk8s.Duration.millis(1500)),
)
try:
    direct_wrong.to_json()
    check(False, "interop: a ConfigMap passed directly as a pull secret is rejected")
except Exception as error:
    message = str(error)
    check("image_pull_secrets[0]: " in message and "Secret is expected" in message, "interop: a ConfigMap passed directly is rejected naming image_pull_secrets[0]")
    check("idle_policy.suspend_after: " in message, "a nested prop is named as Python spells it (idle_policy.suspend_after)")
    check("imagePullSecrets" not in message and "idlePolicy" not in message, "no TypeScript spelling in the error")

crds = cdk8s.Chart(app, "crds")
SandboxCrds(crds, "crds")
names = [c["metadata"]["name"] for c in crds.to_json()]
check(names[0] == "sandboxes.agents.x-k8s.io" and len(names) == 4, "the four CRDs synthesize from Python")

# The default operator image follows the package version, read by the library's JavaScript at load time.
expected_image = f"ghcr.io/cdk8s-agent-sandbox/agent-sandbox-operator:v{version('cdk8s-agent-sandbox')}"
check(AgentSandboxSystem.DEFAULT_IMAGE == expected_image, f"default operator image {AgentSandboxSystem.DEFAULT_IMAGE} is {expected_image}")

app.synth()
print(json.dumps({"passed": checks, "failed": 0}))
