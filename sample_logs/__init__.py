"""The sample SGLang (and vLLM) server logs kept in this folder, and the package that writes them.

Run ``python -m sample_logs`` from the repository root to rewrite every file here, or
``python -m sample_logs --out DIR`` to write them elsewhere (an installed wheel ships this package as
``tracelens.sample_logs``: ``python -m tracelens.sample_logs --out DIR``). Standard library only.
Every random choice comes from a ``random.Random`` with a fixed seed and every timestamp from a
fixed start time (never the clock), and the ``.gz`` copy is written with ``mtime=0``: two runs give
byte-identical files, and tests/test_sample_logs.py checks that they match the committed ones.

The story
---------
A team serves a DeepSeek-V3-architecture model (61 decoder layers, hidden size 7168) on one
node of 8 GPUs (tensor parallelism 8, no data parallelism, so rank tags read ``TPn`` only)
and tunes EAGLE-3 speculative decoding for single-user latency (batch size 1, now and then
2-4). The four main files are dated 2026-11-20 and written in the late-2025/2026 format:
``[YYYY-MM-DD HH:MM:SS TPn] msg``, comma batch headers whose body ends in ``, ``.

baseline_tp8.log
    No speculative decoding. A full start (eight ranks interleaved, ~10 minute weight load),
    then ~26 minutes of chat traffic decoding at ~90 tokens/s.
eagle3_embed_capture.log
    EAGLE-3, 4 draft steps, topk 1, 5 draft tokens. The draft's aux layer ids were set to
    ``[-1, 2, 30]`` by mistake, so the target hands the draft its token embedding (id -1)
    instead of a deep layer. Hand-added ``EAGLE3_DEBUG[...]`` prints (some bare, some with
    the SGLang prefix) show the embedding capture (norm ~10.6) for the warm-up, the first
    50 forward passes and then every ~40th. Acceptance is poor (accept len ~1.76, accept
    rate ~0.19) and decoding is slower than without speculation (~55 tokens/s).
eagle3_embed_capture.log.gz
    A gzip copy of the previous file.
eagle3_fixed.log
    The same server with aux layer ids ``[2, 30, 58]``: no embedding capture, accept len
    ~2.88, accept rate ~0.47, ~94 tokens/s.
sweep_and_crash.log
    Three starts in one file sweeping ``speculative_num_steps`` 2, 3, 5 (draft tokens =
    steps + 1), each with a short start (weights cached, ~2.5 minute load) and ~3 minutes
    of traffic. In run 2 a debug print is cut off: one line reads exactly
    ``EAGLE3_DEBUG[eagle``. Run 3 dies on a long prompt: eight ``Scheduler hit an
    exception`` tracebacks interleaved in blocks, each ending in torch.OutOfMemoryError,
    then the main process's sigquit line.

Era samples (50-200 lines each: a small start and some batch lines in one release's format)

era_2024_rank.log
    Early 2024: no prefix, ``Rank N: load weight begin.``, ``max_total_num_token=``,
    ``new fill batch. #seq: ...`` and unlabelled ``#running-req: ...`` lines. CRLF line ends.
era_2024_gpu.log
    August 2024: ``[gpu=0] `` prefix, ``Prefill batch.`` with ``cache hit rate``.
era_2024_timeonly.log
    September 2024: ``[HH:MM:SS TPn]`` with no date, TP0/TP1, crossing midnight once.
era_2025_dp_attention.log
    May 2025: DP attention (dp 4, tp 8, tags ``DPn TP2n``), EAGLE, each DP group printing
    its own ``Decode batch.`` line with ``accept len`` and ``cuda graph``.
era_2026_comma.log
    May 2026 with ``SGLANG_LOG_MS=1``: millisecond stamps, iteration counters
    (``Decode batch [N],``), ``accept rate``, the dict form ``server_args={...}``, 2026
    wording for graph capture and logger lines ``INFO file.py:N:``, one line with ANSI
    colour codes and one whose ESC bytes were lost.
vllm_spec_decode.log
    vLLM engine and speculative-decoding metrics in each layout: V0 ``Speculative
    metrics:``, V1 ``Draft acceptance rate`` first (with a ``nan%`` idle line), with
    per-position rates, and the current ``Mean acceptance length`` first layout with
    ``(APIServer pid=N) `` before the level.
wrappers.log
    The same eight SGLang lines wrapped by docker-compose, Ray (worker, actor, worker in
    ANSI colour, worker with the ESC bytes lost), an outer log-collector timestamp, a cloud
    console export and a markdown quote, then one tqdm bar sharing a physical line with the
    next record through ``\\r``.

Decode lines come every 40 decode steps (``decode_log_interval``), so about every 0.45 s
without speculation (40 tokens at ~90 tokens/s) and every ~1.3 s with EAGLE-3 (40 verify
steps). Requests come from one closed-loop client; now and then a burst of 1-3 short
one-off requests overlaps it, which is where ``#running-req`` reaches 2-4.

Numbers are kept consistent where a reader could check them: ``#token`` grows by the
tokens generated, ``token usage`` is ``#token / max_total_num_tokens``, ``gen throughput``
is the tokens generated since the previous decode line over the time between them (after
an idle period the count starts at the new request's first decode step), ``accept rate``
is ``(accept len - 1) / (num_draft_tokens - 1)``, and the debug ``input hidden`` norm is the
norm of the concatenated captures.

The modules
-----------
``generate`` names each file with the story function that writes it (``python -m sample_logs`` runs
its ``main``). One module per story:

``deepseek_v3``
    baseline_tp8.log, eagle3_embed_capture.log(.gz), eagle3_fixed.log and sweep_and_crash.log.
``eras``
    the five era_*.log files.
``wrappers``, ``vllm``
    wrappers.log and vllm_spec_decode.log.

The builders the SGLang stories share, in the order a log is made:

``config``
    Model, Spec, Server and Workload, and the ``server_args`` a start prints first.
``models``
    the weights served: DeepSeek-V3, its EAGLE-3 draft, Llama-architecture models.
``dialects``
    batch statistics, and how each SGLang release words every record (prefixes, rank tags, headers).
``log``
    the records of one file, sorted by time so that ranks interleave, and the uvicorn lines.
``startup``
    a server start, from ``server_args`` to "fired up".
``traffic``
    serving: prefill and decode lines, access lines, scrapes; ``single_run`` = one start + one phase.
``eagle3_debug``
    the hand-added ``EAGLE3_DEBUG`` prints.
``crash``
    interleaved out-of-memory tracebacks and the sigquit line.
"""
