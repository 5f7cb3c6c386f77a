"""Check the wheel jsii-pacmak built: the Python module, the jsii runtime glue, the embedded npm
tarball (which must hold only the library, as test/package/packed-files.test.ts checks for npm) and
the wheel metadata (its Development Status too); nothing else. Usage: wheel_files.py <wheel>"""
import io
import re
import sys
import tarfile
import zipfile

wheel_path = sys.argv[1]
version = re.match(r".*/cdk8s_agent_sandbox-([^-]+)-py3-none-any\.whl$", wheel_path).group(1)
names = sorted(zipfile.ZipFile(wheel_path).namelist())
info = f"cdk8s_agent_sandbox-{version}.dist-info"
tarball = f"cdk8s_agent_sandbox/_jsii/cdk8s-agent-sandbox@{version}.jsii.tgz"
expected = sorted([
    "cdk8s_agent_sandbox/__init__.py",
    "cdk8s_agent_sandbox/py.typed",
    "cdk8s_agent_sandbox/_jsii/__init__.py",
    tarball,
    f"{info}/LICENSE", f"{info}/METADATA", f"{info}/WHEEL", f"{info}/top_level.txt", f"{info}/RECORD",
])
failed = False
if names != expected:
    print(f"FAIL: wheel files\n  unexpected: {sorted(set(names) - set(expected))}\n  missing: {sorted(set(expected) - set(names))}")
    failed = True
else:
    print(f"ok: the wheel holds {len(names)} files: the module, the jsii glue and tarball, the metadata")

with zipfile.ZipFile(wheel_path) as z:
    members = tarfile.open(fileobj=io.BytesIO(z.read(tarball))).getnames()
packed = sorted(m.removeprefix("package/") for m in members if not m.endswith("/"))
outside_lib = [f for f in packed if not f.startswith("lib/")]
bad_lib = [f for f in packed if f.startswith("lib/") and not re.search(r"\.(js|d\.ts)$", f)]
if outside_lib != [".jsii", "API.md", "LICENSE", "README.md", "package.json"] or bad_lib or "lib/index.js" not in packed:
    print(f"FAIL: the embedded npm tarball holds {outside_lib} outside lib/ and {bad_lib} in lib/")
    failed = True
else:
    print(f"ok: the embedded npm tarball holds only lib/ ({len(packed) - len(outside_lib)} files), .jsii, API.md, LICENSE, README.md, package.json")
# The metadata says what is true of a 0.x package: beta (jsii stability "experimental", .projenrc.ts).
with zipfile.ZipFile(wheel_path) as z:
    metadata = z.read(f"{info}/METADATA").decode()
statuses = re.findall(r"^Classifier: (Development Status :: .*)$", metadata, re.M)
if statuses != ["Development Status :: 4 - Beta"]:
    print(f"FAIL: the wheel's Development Status classifiers are {statuses}, not ['Development Status :: 4 - Beta']")
    failed = True
else:
    print("ok: the wheel declares Development Status :: 4 - Beta")
sys.exit(1 if failed else 0)
