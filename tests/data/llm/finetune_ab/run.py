"""The first port answer of naive-only tasks from a served model, compile-only: the base Qwen2.5-Coder-1.5B
against the same GGUF with the LoRA adapter `kagent finetune` wrote (served with --lora_path). Same prompts
(kagent's port prompt for the planner's first skeleton, as `kagent export --ports` trains on), same grammar,
same seeds. From the repository root, with the server of the arm on PORT:
`python3 tests/data/llm/finetune_ab/run.py ARM PORT OUTDIR SEEDS TASK...` (SEEDS: comma-separated)."""
import json, sys, time
from pathlib import Path
import openai

from kernel_agent.task import load_task
from kernel_agent.optimize.space import Space
from kernel_agent.llm.context import parent_view
from kernel_agent.llm.porting import port_prompt_context, fills_reader
from kernel_agent.llm.prompts import render
from kernel_agent.llm import grammar as G
from kernel_agent.skeletons import fitting
from kernel_agent.check import check
from kernel_agent.llm.proposer import PORT_MAX_TOKENS, _port_header

arm, port, out = sys.argv[1], sys.argv[2], Path(sys.argv[3])
seeds = [int(s) for s in sys.argv[4].split(",")]
out.mkdir(parents=True, exist_ok=True)
client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="x", timeout=900)
for name in sys.argv[5:]:
    task = load_task(Path(f"tasks/naive/{name}.yaml"))
    space = Space.of_task(task)
    sk = fitting(task)[0]
    ctx = port_prompt_context(task, parent_view(space, space.default("baseline")), sk, [])
    view = ctx["skeleton"]
    asked = [s["name"] for s in view["slots"]]
    optional = {s["name"] for s in view["slots"] if s["optional"]}
    msgs = [{"role": "system", "content": render("system_port.j2", arch="sm_90")},
            {"role": "user", "content": render("port.j2", **ctx)}]
    for seed in seeds:
        t = time.time()
        r = client.chat.completions.create(model="qwen", messages=msgs, temperature=0.2, max_tokens=PORT_MAX_TOKENS,
                                           seed=seed, extra_body={"grammar": G.slots_grammar(asked, optional)})
        text = r.choices[0].message.content or ""
        secs = time.time() - t
        read = fills_reader(sk, task, {}, _port_header(sk.name, task.name))
        parsed, ported = read(text, r.choices[0].finish_reason == "stop")
        verdict, msg, kernel = "unparsed", parsed.feedback, None
        if ported is not None:
            kernel = out / f"{name}.s{seed}.cu"
            kernel.write_text(ported.instance.source)
            o = check(task, kernel, arch="sm_90")
            verdict, msg = o.status.value, o.message[:300]
        rec = {"task": name, "skeleton": sk.name, "arm": arm, "seed": seed, "seconds": round(secs, 1),
               "verdict": verdict, "message": msg, "kernel": kernel.name if kernel else None, "text": text,
               "tokens": r.usage.completion_tokens if r.usage else None}
        with open(out / "results.jsonl", "a") as fh:
            fh.write(json.dumps(rec) + "\n")
        print(name, seed, sk.name, verdict, round(secs), msg[:150].replace("\n", " "), flush=True)
