"""Issue 15 stop tpot16 variants (experiment; reverted after measuring): refit + in-sample + leave-one-model-out.

    python benchmarks/tpot16_variants.py NAME [global=k,..] [framework=k,..] [pair=k,..] [set=k:v,..]
        [prior=P] [wttft=W] [sglang_df=1] [blend=1] [cv=0|1] [csv=PATH] [out=DIR]

Adds the named accuracy.py factors (kv_stream, roof_overlap, expert_tile, expert_tile_d, fp8_rate: see
accuracy.BOUNDS and StepTerms.time_s) to the fit's global / per-framework / per-pair sets, runs
fit_efficiency.fit_all and accuracy.loo_errors exactly as accuracy.py does, prints (b) and (c) TTFT / TPOT
median (p90) and the ranking, and writes the per-row errors to OUT/NAME.json. sglang_df=1 runs SGLang's rows with
the decode-first steady state (variant 11); blend=1 adds cohort_w_s, the prefill_first blend weight (variant 12;
fit it with framework=cohort_w_s). TILE_NATIVE_ONLY=1 in the environment leaves weight-only expert formats out of
the tile floor (variant 7). The variants of benchmarks/README.md, issue 15 stop tpot16:
  1 global=kv_stream  2 framework=kv_stream  3 global=roof_overlap  4 global=expert_tile
  5 framework=expert_tile set=expert_tile:1  6 global=expert_tile_d set=expert_tile_d:1  7 (6 with TILE_NATIVE_ONLY=1)
  8 global=fp8_rate  9 prior=2  10 wttft=0.5  11 sglang_df=1  12 blend=1 framework=cohort_w_s
"""
import sys, json, time, math
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parent)); sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import accuracy as A
import fit_efficiency as F
import numpy as np
name=sys.argv[1]
opts=dict(a.split('=',1) for a in sys.argv[2:])
for key, attr in (('global','GLOBAL_PARAMS'),('framework','FRAMEWORK_PARAMS'),('pair','PARAMS')):
    if key in opts:
        extra=tuple(x for x in opts[key].split(',') if x)
        val = getattr(A, attr) + extra
        setattr(A, attr, val); setattr(F, attr, val)
if 'set' in opts:  # k:v fixed overrides in NEUTRAL
    for kv in opts['set'].split(','):
        k,v=kv.split(':'); A.NEUTRAL[k]=float(v)
if 'prior' in opts: F.PRIOR=float(opts['prior'])
if 'wttft' in opts: F.W_TTFT=float(opts['wttft'])
t0=time.time()
prep,_=A.prepare_all(A.load_rows(Path(opts.get('csv', A.DEFAULT_CSV))))
import io, contextlib
if opts.get('blend')=='1':
    from solver.estimate.serving import ServingPolicy, serving_times, ServingTimes
    A.NEUTRAL['cohort_w_s']=1.0; A.BOUNDS['cohort_w_s']=(0.0,1.0)
    _orig=A.predict_times
    def _pt(p, params):
        t, pre, dec = _orig(p, params)
        w = {**A.NEUTRAL, **params}['cohort_w_s']
        pol = ServingPolicy.of(p.base)
        if w >= 1.0 or pol.decode_first_for(p.shape.synced_ranks):
            return t, pre, dec
        wl = A.replace(p.case.workload, request_overhead_s={**A.NEUTRAL, **params}['request_overhead_s'])
        ss = serving_times(p.shape, pre, dec, wl, ServingPolicy(True, pol.first_token_iterations, True))
        mix = lambda a, b: w * a + (1 - w) * b
        return ServingTimes(mix(t.ttft_s, ss.ttft_s), mix(t.tpot_s, ss.tpot_s), t.ttft_first_wave_s, t.ttft_steady_s,
                            t.slot_wait_s, t.prefill_share, mix(t.request_s, ss.request_s), t.first_token_delay_s), pre, dec
    A.predict_times=_pt
from dataclasses import replace as _rep
if opts.get('sglang_df')=='1':
    prep=[_rep(p, base=_rep(p.base, decode_first=True, decode_first_synced=True)) if p.framework=='sglang' else p for p in prep]
buf=io.StringIO()
with contextlib.redirect_stdout(buf):
    fac, filled, shared = F.fit_all(prep)
print(buf.getvalue())
def params_b(p): return {**A.profile_params(p, None), **{k:v for k,v in A.NEUTRAL.items() if k not in A.profile_params(p,None)}, **fac[p.framework][p.hardware]}
bt,bp=A.errors(prep, params_b)
print('in-sample done', time.time()-t0, flush=True)
if opts.get('cv','1')=='1':
    ct,cp,notes=A.loo_errors(prep, F.fit_group, F.fit_global, F.fit_framework)
else:
    ct,cp,notes=bt*np.nan,bp*np.nan,[]
def s(e): a=np.abs(e)*100; return f"{np.median(a):.1f}% ({np.percentile(a,90):.1f})"
print(f"{name}: (b) {s(bt)} / {s(bp)}   (c) {s(ct)} / {s(cp)}")
print(A.ranking(prep, bt, bp)[0]); 
if opts.get('cv','1')=='1': print(A.ranking(prep, ct, cp)[0])
for n in notes: 
    if 'refitted' in n: print(n)
out=[]
for i,p in enumerate(prep):
    pc=p.case.pc; w=p.case.workload
    out.append(dict(i=i, fw=p.framework, hw=p.hardware, model=A.short_model(p.model), tp=pc.attn_tp_size, dp=pc.attn_replicas, ep=pc.moe_ep_size, world=pc.world_size,
       isl=w.isl, osl=w.osl, C=w.concurrency, B=p.shape.running, gb=p.shape.graph_batch, n=p.shape.prompts_per_step, gq=str(p.row.get('gemm_quant_mode')), mq=str(p.row.get('moe_quant_mode')),
       ttft=p.ttft_s, tpot=p.tpot_s, bt=float(bt[i]), bp=float(bp[i]), ct=float(ct[i]), cp=float(cp[i]), eager=p.shape.eager_decode))
json.dump(dict(rows=out, shared=shared, fac=fac), open(Path(opts.get('out', '.')) / f'{name}.json','w'))
print('runtime', time.time()-t0)
