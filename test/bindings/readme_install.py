"""README's "Into a cluster, in Python" program, run as written against the wheel, must write the
same files, byte for byte, as the TypeScript program it stands beside (examples/install/main.ts,
which test/readme.test.ts checks is README's TypeScript block).

Usage: readme_install.py <python with the wheel installed>. Runs both programs in temporary
directories (each cdk8s App writes to ./dist there) and compares the synthesized files.
"""
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
HEADING = '### Into a cluster, in Python'


def readme_program():
    text = open(os.path.join(ROOT, 'README.md'), encoding='utf-8').read()
    start = text.find(HEADING)
    if start < 0:
        raise SystemExit(f'README.md has no "{HEADING}" section')
    block = re.search(r'```python\n(.*?)```', text[start:], re.S)
    if not block:
        raise SystemExit(f'README.md\'s "{HEADING}" section has no ```python block')
    return block.group(1)


def synthesized(cwd):
    """Every file cdk8s wrote to <cwd>/dist, as a list of YAML documents (text) per file name."""
    out = os.path.join(cwd, 'dist')
    return {name: [d for d in open(os.path.join(out, name), encoding='utf-8').read().split('---\n') if d.strip()]
            for name in sorted(os.listdir(out))}


def kind_name(doc):
    kind = re.search(r'^kind: (\S+)', doc, re.M)
    name = re.search(r'^  name: (\S+)', doc, re.M)
    return f"{kind.group(1) if kind else '?'}/{name.group(1) if name else '?'}"


def main():
    python = sys.argv[1]
    with tempfile.TemporaryDirectory() as py_dir, tempfile.TemporaryDirectory() as ts_dir:
        program = os.path.join(py_dir, 'main.py')
        open(program, 'w', encoding='utf-8').write(readme_program())
        subprocess.run([python, program], cwd=py_dir, check=True)
        subprocess.run(['node', '-r', os.path.join(ROOT, 'node_modules', 'ts-node', 'register', 'transpile-only'),
                        os.path.join(ROOT, 'examples', 'install', 'main.ts')], cwd=ts_dir, check=True,
                       env={**os.environ, 'TS_NODE_PROJECT': os.path.join(ROOT, 'tsconfig.json')})
        ours, theirs = synthesized(py_dir), synthesized(ts_dir)
    failures = 0
    # Not vacuous: the TypeScript program writes the install and the pool (README applies both).
    if sorted(theirs) != ['agents.k8s.yaml', 'system.k8s.yaml'] or sum(len(d) for d in theirs.values()) < 10:
        print(f'FAIL the TypeScript program wrote {sorted(theirs)} ({sum(len(d) for d in theirs.values())} objects)')
        failures += 1
    if sorted(ours) != sorted(theirs):
        print(f'FAIL files: Python wrote {sorted(ours)}, TypeScript {sorted(theirs)}')
        failures += 1
    for name in sorted(set(ours) & set(theirs)):
        if ours[name] == theirs[name]:
            print(f'PASS {name}: the same {len(ours[name])} objects')
            continue
        failures += 1
        print(f'FAIL {name} differs: Python {[kind_name(d) for d in ours[name]]}, TypeScript {[kind_name(d) for d in theirs[name]]}')
        for a, b in zip(ours[name], theirs[name]):
            if a != b:
                print(f'  first difference in {kind_name(a)}')
                break
    print(f'readme-install: {failures} failed')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
