/**
 * The descriptor checks of ./confined-fs, on the state a lost race leaves: a path that confine()
 * passed as a real directory is a link out of the workspace by the time it is opened.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { tempWorkspace } from './runtime-http';
import {
  ConfinementError, createAtomically, emptyDirectory, openConfined, openDirectory, openVerified, removeEntry, statEntryInside,
} from '../../src/sandboxd/confined-fs';

let dirs: ReturnType<typeof tempWorkspace>;

beforeEach(() => {
  dirs = tempWorkspace('sandboxd-confined-fs-');
  const { workspace, outside } = dirs;
  writeFileSync(path.join(outside, 'secret'), 'secret');
  mkdirSync(path.join(outside, 'tree'));
  writeFileSync(path.join(outside, 'tree', 'leaf'), 'leaf');
  // `swapped` stands where a directory was when its path was checked.
  symlinkSync(outside, path.join(workspace, 'swapped'));
});
afterEach(() => rmSync(dirs.base, { recursive: true, force: true }));

test('a directory walk refuses a link met on the way, and creates nothing behind it', async () => {
  const { workspace, outside } = dirs;
  await expect(openDirectory(workspace, path.join(workspace, 'swapped', 'new'), 'swapped/new/x', 0o777)).rejects.toThrow(ConfinementError);
  await expect(createAtomically(workspace, path.join(workspace, 'swapped', 'x'), 'swapped/x')).rejects.toThrow(/symbolic link/);
  expect(readdirSync(outside).sort()).toEqual(['secret', 'tree']);
  // Negative control: the same walk through a real directory creates it and the file lands.
  const sink = await createAtomically(workspace, path.join(workspace, 'real', 'x'), 'real/x');
  sink.stream.end('data');
  await new Promise((r) => sink.stream.once('finish', r));
  await sink.finish();
  expect(readFileSync(path.join(workspace, 'real', 'x'), 'utf8')).toBe('data');
  expect(readdirSync(path.join(workspace, 'real'))).toEqual(['x']);
});

test('an opened file is judged by its descriptor: inside is served, outside refused', async () => {
  const { workspace, outside } = dirs;
  writeFileSync(path.join(workspace, 'inside'), 'inside');
  const inside = await openConfined(workspace, 'inside', 0);
  expect((await inside.readFile()).toString()).toBe('inside');
  await inside.close();
  // The path confine() would have passed before the swap: the open follows the link, the descriptor check refuses it.
  await expect(openVerified(workspace, path.join(workspace, 'swapped', 'secret'), 0, 'swapped/secret')).rejects.toThrow(ConfinementError);
  await expect(openConfined(workspace, 'swapped/secret', 0)).rejects.toThrow(ConfinementError);
});

test('removals never follow a link: the link goes, what it points at stays', async () => {
  const { workspace, outside } = dirs;
  const root = await openDirectory(workspace, workspace, '.');
  try {
    expect(await removeEntry(root, 'swapped', true)).toBe(true);
    expect(existsSync(path.join(workspace, 'swapped'))).toBe(false);
    expect(existsSync(path.join(outside, 'tree', 'leaf'))).toBe(true);
    // A tree whose subdirectory is a link out: the link is unlinked, the outside tree kept.
    mkdirSync(path.join(workspace, 'mixed', 'sub'), { recursive: true });
    writeFileSync(path.join(workspace, 'mixed', 'sub', 'f'), 'f');
    symlinkSync(path.join(outside, 'tree'), path.join(workspace, 'mixed', 'out'));
    expect(await removeEntry(root, 'mixed', true)).toBe(true);
    expect(existsSync(path.join(workspace, 'mixed'))).toBe(false);
    expect(readFileSync(path.join(outside, 'tree', 'leaf'), 'utf8')).toBe('leaf');
    expect(await removeEntry(root, 'gone', false)).toBe(false);
    // emptyDirectory (a recursive delete of the root) keeps the root and what links lead to.
    symlinkSync(outside, path.join(workspace, 'again'));
    writeFileSync(path.join(workspace, 'file'), 'x');
    await emptyDirectory(root);
    expect(readdirSync(workspace)).toEqual([]);
    expect(readdirSync(outside).sort()).toEqual(['secret', 'tree']);
  } finally {
    await root.close();
  }
});

test('statEntryInside follows links only to inside the workspace', async () => {
  const { workspace, outside } = dirs;
  writeFileSync(path.join(workspace, 'target'), '12345');
  symlinkSync(path.join(workspace, 'target'), path.join(workspace, 'in-link'));
  symlinkSync(path.join(workspace, 'nowhere'), path.join(workspace, 'dangling'));
  const root = await openDirectory(workspace, workspace, '.');
  try {
    expect((await statEntryInside(workspace, root, 'in-link'))?.size).toBe(5);
    expect(await statEntryInside(workspace, root, 'swapped')).toBeUndefined();
    expect(await statEntryInside(workspace, root, 'dangling')).toBeUndefined();
  } finally {
    await root.close();
  }
});
