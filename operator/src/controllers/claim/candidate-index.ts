/**
 * The warm candidates of every pool, kept ranked as Sandbox events arrive, so a claim's pick costs
 * O(log n) (O(1) when nothing is excluded) instead of a pass over the pool: the same choice as
 * CandidateRanking (select.ts), which stays the specification and the fallback.
 *
 * Fed by the Sandbox informer's events (added after the cache has applied them), and seeded from
 * the cache when it starts following, so it holds exactly the cache's members: a deleted or
 * claimed Sandbox leaves on its event; a restarted operator rebuilds it from the initial list.
 *
 * Layout, per pool (namespace, name and UID of the member's controlling SandboxWarmPool): six
 * buckets (Ready, Ready and stale, starting, starting and stale, and the two without a Pod IP);
 * in each ranked bucket the members by node, every node's members in a heap oldest first, and the
 * nodes in a heap by (most members, oldest member). Staleness depends on the template, which only
 * a claim knows: the first pick after a template change re-tiers the pool's members, once.
 */
import { WarmPoolUpdateStrategyType } from '#api/enums';
import { KINDS } from '#api/groups';
import { SandboxLabels } from '#api/labels';
import { NameHash } from '#api/name-hash';
import { PositionalHeap, type HeapItem } from './positional-heap';
import { CandidateRanking, type Candidates, type SelectionContext, type Selection, type StuckCheck, NO_MEMBER, RECREATE_UNVERIFIABLE } from './select';
import { controllerRefOf, isDeleting, isReady, refIsKind, type Sandbox } from '../../model';
import { staleCheck, type BlueprintFingerprint } from '../../model/blueprint';
import { keyOf, type Informer } from '../../runtime/types';

interface Member extends HeapItem {
  readonly sandbox: Sandbox;
  readonly uid: string;
  readonly created: string;
  readonly name: string;
  /** '' when not scheduled. */
  readonly node: string;
  readonly ready: boolean;
  readonly hasIp: boolean;
  readonly pool: PoolMembers;
  stale: boolean;
  bucket?: RankedBucket | PendingBucket;
}

interface NodeGroup extends HeapItem {
  readonly name: string;
  readonly members: PositionalHeap<Member>;
}

/** Members without a Pod IP: counted, and the oldest taken once a claim's grace is over (oldestPending). */
interface PendingBucket {
  readonly kind: 'pending';
  readonly members: Set<Member>;
}

interface RankedBucket {
  readonly kind: 'ranked';
  size: number;
  readonly nodes: Map<string, NodeGroup>;
  readonly ranking: PositionalHeap<NodeGroup>;
  readonly unscheduled: PositionalHeap<Member>;
}

interface TemplateView {
  readonly templateName: string;
  readonly fingerprint: BlueprintFingerprint;
}

/** Operations done by picks, for tests and benchmarks: nodes and members looked at, and comparisons made. */
export interface IndexCounters {
  visited: number;
  compared: number;
}

class PoolMembers {
  public readonly members = new Set<Member>();
  /** Ready, Ready and stale, starting, starting and stale (CandidateRanking's tiers). */
  public readonly tiers: RankedBucket[];
  /** Without a Pod IP: current, stale. */
  public readonly pending: PendingBucket[] = [{ kind: 'pending', members: new Set() }, { kind: 'pending', members: new Set() }];
  public view?: TemplateView;
  public isStale?: (sandbox: Sandbox) => boolean;

  /** `key`: `namespace/pool name`; `uid`: the pool's UID. */
  public constructor(public readonly key: string, public readonly uid: string, private readonly counters: IndexCounters) {
    this.tiers = [0, 1, 2, 3].map(() => this.rankedBucket());
  }

  public add(member: Member): void {
    this.members.add(member);
    member.stale = this.isStale?.(member.sandbox) ?? false;
    this.place(member);
  }

  public remove(member: Member): void {
    this.members.delete(member);
    this.unplace(member);
  }

  /** Judge members against `view` (undefined: the template is unknown, nothing is stale); O(pool) when it changed. */
  public judgeBy(view: TemplateView | undefined): void {
    if (sameView(this.view, view)) return;
    this.view = view;
    const check = view ? staleCheck(view.templateName, view.fingerprint) : undefined;
    this.isStale = check ? (s) => check(s, false) : undefined;
    for (const member of this.members) {
      const stale = this.isStale?.(member.sandbox) ?? false;
      if (stale === member.stale) continue;
      this.unplace(member);
      member.stale = stale;
      this.place(member);
    }
  }

  private place(member: Member): void {
    if (!member.hasIp) {
      const bucket = this.pending[member.stale ? 1 : 0];
      bucket.members.add(member);
      member.bucket = bucket;
      return;
    }
    const bucket = this.tiers[(member.ready ? 0 : 2) + (member.stale ? 1 : 0)];
    member.bucket = bucket;
    bucket.size++;
    if (!member.node) {
      bucket.unscheduled.push(member);
      return;
    }
    const group = bucket.nodes.get(member.node);
    if (group) {
      group.members.push(member);
      bucket.ranking.resort(group);
      return;
    }
    const fresh: NodeGroup = { name: member.node, heapPos: -1, members: new PositionalHeap((a, b) => this.older(a, b)) };
    fresh.members.push(member);
    bucket.nodes.set(member.node, fresh);
    bucket.ranking.push(fresh);
  }

  private unplace(member: Member): void {
    const bucket = member.bucket;
    member.bucket = undefined;
    if (!bucket) return;
    if (bucket.kind === 'pending') {
      bucket.members.delete(member);
      return;
    }
    bucket.size--;
    if (!member.node) {
      bucket.unscheduled.remove(member);
      return;
    }
    const group = bucket.nodes.get(member.node)!;
    group.members.remove(member);
    if (group.members.size > 0) {
      bucket.ranking.resort(group);
    } else {
      bucket.ranking.remove(group);
      bucket.nodes.delete(member.node);
    }
  }

  private rankedBucket(): RankedBucket {
    return {
      kind: 'ranked',
      size: 0,
      nodes: new Map(),
      // Most members first; ties to the node with the oldest member.
      ranking: new PositionalHeap((a, b) => a.members.size > b.members.size
        || (a.members.size === b.members.size && this.older(a.members.peek()!, b.members.peek()!))),
      unscheduled: new PositionalHeap((a, b) => this.older(a, b)),
    };
  }

  /** CandidateRanking's order: creation time (RFC 3339 strings compare in time order), then name. */
  public older(a: Member, b: Member): boolean {
    this.counters.compared++;
    return a.created < b.created || (a.created === b.created && a.name < b.name);
  }
}

function sameView(a: TemplateView | undefined, b: TemplateView | undefined): boolean {
  if (!a || !b) return a === b;
  return a.templateName === b.templateName && (a.fingerprint === b.fingerprint || a.fingerprint.canonical === b.fingerprint.canonical);
}

/** The pool a Sandbox is a claimable member of, whatever the claim: isAdoptable's conditions that do not involve the claim. */
function poolOf(sandbox: Sandbox): { readonly pool: string; readonly uid: string } | undefined {
  const labels = sandbox.metadata.labels;
  if (isDeleting(sandbox) || labels?.[SandboxLabels.SANDBOX_TEMPLATE_REF_HASH] === undefined) return undefined;
  const ref = controllerRefOf(sandbox);
  if (!refIsKind(ref, KINDS.warmPool) || labels[SandboxLabels.WARM_POOL_SANDBOX] !== NameHash.of(ref!.name)) return undefined;
  return { pool: `${sandbox.metadata.namespace ?? ''}/${ref!.name}`, uid: ref!.uid };
}

export class WarmCandidateIndex {
  public readonly counters: IndexCounters = { visited: 0, compared: 0 };
  private readonly byKey = new Map<string, Member>();
  private readonly byUid = new Map<string, Set<Member>>();
  /** `namespace/pool name` → pool UID → its members. */
  private readonly pools = new Map<string, Map<string, PoolMembers>>();

  /** Follow an informer's events, starting from what its cache holds now. */
  public follow(informer: Pick<Informer<Sandbox>, 'addHandlers' | 'list'>): this {
    informer.addHandlers({
      onAdd: (sb) => this.upsert(sb),
      onUpdate: (_, sb) => this.upsert(sb),
      onDelete: (sb) => this.delete(sb),
    });
    for (const sb of informer.list()) this.upsert(sb);
    return this;
  }

  /** Members indexed, for tests. */
  public get size(): number {
    return this.byKey.size;
  }

  public upsert(sandbox: Sandbox): void {
    const key = keyOf(sandbox);
    const old = this.byKey.get(key);
    if (old?.sandbox === sandbox) return;
    if (old) this.drop(key, old);
    const home = poolOf(sandbox);
    if (!home) return;
    let byUid = this.pools.get(home.pool);
    if (!byUid) this.pools.set(home.pool, (byUid = new Map()));
    let pool = byUid.get(home.uid);
    if (!pool) byUid.set(home.uid, (pool = new PoolMembers(home.pool, home.uid, this.counters)));
    const member: Member = {
      sandbox,
      uid: sandbox.metadata.uid ?? '',
      created: sandbox.metadata.creationTimestamp ?? '',
      name: sandbox.metadata.name,
      node: sandbox.status?.nodeName ?? '',
      ready: isReady(sandbox),
      hasIp: (sandbox.status?.podIPs?.length ?? 0) > 0,
      pool,
      stale: false,
      heapPos: -1,
    };
    this.byKey.set(key, member);
    let sameUid = this.byUid.get(member.uid);
    if (!sameUid) this.byUid.set(member.uid, (sameUid = new Set()));
    sameUid.add(member);
    pool.add(member);
  }

  public delete(sandbox: Sandbox): void {
    const key = keyOf(sandbox);
    const old = this.byKey.get(key);
    if (old) this.drop(key, old);
  }

  /**
   * A claim's view of its pool's candidates: CandidateRanking's `best` and `oldestPending`, from the
   * index. Each first re-judges the pool's members against the context's template (a re-sort when it
   * changed).
   */
  public candidates(poolUpdateStrategy: string | undefined, context: SelectionContext): Candidates {
    return {
      best: (exclude) => this.best(poolUpdateStrategy, context, exclude),
      oldestPending: (exclude, stuck) => this.oldestPending(poolUpdateStrategy, context, exclude, stuck),
    };
  }

  /** The claim's pool, judged against its template; else the answer without one, or the slow way. */
  private poolFor(poolUpdateStrategy: string | undefined, context: SelectionContext):
  { readonly pool: PoolMembers } | { readonly none: string } | { readonly slow: CandidateRanking } {
    const recreate = poolUpdateStrategy === WarmPoolUpdateStrategyType.RECREATE;
    const view = context.fingerprint !== undefined && context.templateName !== undefined
      ? { templateName: context.templateName, fingerprint: context.fingerprint }
      : undefined;
    if (recreate && !view) return { none: RECREATE_UNVERIFIABLE };
    const { claim, poolUid } = context;
    const byUid = this.pools.get(`${claim.metadata.namespace ?? ''}/${claim.spec.warmPoolRef.name}`);
    if (!byUid) return { none: NO_MEMBER };
    if (poolUid === undefined && byUid.size > 1) {
      // Members of several pools of that name and the claim's pool UID unknown (never the case with
      // an API server, which always sets UIDs): rank their union the slow way.
      const members = [...byUid.values()].flatMap((p) => [...p.members].map((m) => m.sandbox));
      return { slow: new CandidateRanking(members, poolUpdateStrategy, context) };
    }
    const pool = poolUid === undefined ? byUid.values().next().value! : byUid.get(poolUid);
    if (!pool) return { none: NO_MEMBER };
    pool.judgeBy(view);
    return { pool };
  }

  private oldestPending(poolUpdateStrategy: string | undefined, context: SelectionContext,
    exclude: ReadonlySet<string> = new Set(), stuck?: StuckCheck): Sandbox | undefined {
    const found = this.poolFor(poolUpdateStrategy, context);
    if ('none' in found) return undefined;
    if ('slow' in found) return found.slow.oldestPending(exclude, stuck);
    const recreate = poolUpdateStrategy === WarmPoolUpdateStrategyType.RECREATE;
    for (const [stale, bucket] of found.pool.pending.entries()) {
      if (recreate && stale) continue;
      let oldest: Member | undefined;
      for (const m of bucket.members) {
        this.counters.visited++;
        if (exclude.has(m.uid) || stuck?.(m.sandbox)) continue;
        if (!oldest || found.pool.older(m, oldest)) oldest = m;
      }
      if (oldest) return oldest.sandbox;
    }
    return undefined;
  }

  private best(poolUpdateStrategy: string | undefined, context: SelectionContext, exclude: ReadonlySet<string> = new Set()): Selection {
    const found = this.poolFor(poolUpdateStrategy, context);
    if ('none' in found) return { kind: 'none', reason: found.none };
    if ('slow' in found) return found.slow.best(exclude);
    const { pool } = found;
    const recreate = poolUpdateStrategy === WarmPoolUpdateStrategyType.RECREATE;

    const excluded = new Map<RankedBucket | PendingBucket, Set<Member>>();
    for (const uid of exclude) {
      for (const m of this.byUid.get(uid) ?? []) {
        if (m.pool !== pool || !m.bucket) continue;
        let set = excluded.get(m.bucket);
        if (!set) excluded.set(m.bucket, (set = new Set()));
        set.add(m);
      }
    }
    for (const [tier, bucket] of pool.tiers.entries()) {
      if (recreate && tier % 2 === 1) continue;
      const member = this.pick(pool, bucket, excluded.get(bucket));
      if (member) return { kind: 'candidate', sandbox: member.sandbox, ready: tier < 2, stale: tier % 2 === 1 };
    }
    const pending = pool.pending.filter((_, stale) => !(recreate && stale))
      .reduce((n, bucket) => n + bucket.members.size - (excluded.get(bucket)?.size ?? 0), 0);
    if (pending > 0) return { kind: 'network-pending', count: pending };
    return { kind: 'none', reason: NO_MEMBER };
  }

  /**
   * spreadPick over a bucket: the node with the most members not excluded (ties to the node whose
   * oldest such member is older), then its oldest; unscheduled members last. Only nodes holding
   * excluded members need a second look; the best of the others is the first of them in the ranking.
   */
  private pick(pool: PoolMembers, bucket: RankedBucket, excluded: ReadonlySet<Member> = new Set()): Member | undefined {
    if (bucket.size - excluded.size <= 0) return undefined;
    const firstAllowed = (ordered: Iterable<Member>) => {
      for (const m of ordered) {
        this.counters.visited++;
        if (!excluded.has(m)) return m;
      }
      return undefined;
    };
    const affected = new Map<NodeGroup, number>();
    for (const m of excluded) {
      if (m.node) {
        const group = bucket.nodes.get(m.node)!;
        affected.set(group, (affected.get(group) ?? 0) + 1);
      }
    }
    let best: { count: number; oldest: Member } | undefined;
    const consider = (count: number, oldest: Member) => {
      if (!best || count > best.count || (count === best.count && pool.older(oldest, best.oldest))) best = { count, oldest };
    };
    for (const [group, out] of affected) {
      const count = group.members.size - out;
      if (count > 0) consider(count, firstAllowed(group.members.ascending())!);
    }
    for (const group of bucket.ranking.ascending()) {
      this.counters.visited++;
      if (affected.has(group)) continue;
      this.counters.visited++;
      consider(group.members.size, group.members.peek()!);
      break;
    }
    return best ? best.oldest : firstAllowed(bucket.unscheduled.ascending());
  }

  private drop(key: string, member: Member): void {
    this.byKey.delete(key);
    const sameUid = this.byUid.get(member.uid)!;
    sameUid.delete(member);
    if (sameUid.size === 0) this.byUid.delete(member.uid);
    const { pool } = member;
    pool.remove(member);
    if (pool.members.size > 0) return;
    // An empty pool is forgotten (its template view with it): pools come and go.
    const byUid = this.pools.get(pool.key)!;
    byUid.delete(pool.uid);
    if (byUid.size === 0) this.pools.delete(pool.key);
  }
}
