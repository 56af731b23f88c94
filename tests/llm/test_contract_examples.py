"""A slot contract's examples, kept to the names the task has (`kernel_agent/llm/contract_examples.py`)."""

from pathlib import Path

from kernel_agent.llm.contract_examples import (
    in_scope_examples,
    names_used,
    stand_ins,
    with_given_names,
    written_buffers,
)
from kernel_agent.llm.porting import skeleton_view
from kernel_agent.skeletons import library
from kernel_agent.task import load_task

ROOT = Path(__file__).resolve().parents[2]
FINALIZE = ("`void finalize(PARAMS, long long o, long long c, float acc, long long arg)`: write output (o, c), "
            "e.g. `y[o * D + c] = acc;` (sum) or `idx[o * D + c] = arg;` (argmax)")


def test_names_used_leaves_out_calls_members_declarations_and_keywords():
    assert names_used("const float v = x[i]; return v > 0.f ? v : 0.01f * v;") == {"x", "i"}
    assert names_used("s.sum += expf(o.m - m); p->q = 1.f;") == {"s", "o", "m", "p"}
    assert names_used("return INFINITY;") == set()


def test_written_buffers():
    assert written_buffers("y[o * D + c] = acc;") == {"y"}
    assert written_buffers("atomicAdd(loss, s.sum / batch);") == {"loss"}
    assert written_buffers("return y[i] == 0.f;") == set()


def test_an_example_in_foreign_names_is_left_out_and_the_one_in_the_tasks_names_kept():
    argmin = in_scope_examples(FINALIZE, ["x", "idx", "B", "N", "D"])
    assert argmin.endswith("e.g. `idx[o * D + c] = arg;` (argmax)")
    assert "y[" not in argmin
    mean = in_scope_examples(FINALIZE, ["x", "y", "B", "N", "D"])
    assert mean.endswith("e.g. `y[o * D + c] = acc;` (sum)")


def test_all_examples_in_scope_leave_the_contract_as_it_is():
    contract = ("`float combine(PARAMS, float acc, float v)`: e.g. `return acc + v;` (sum), "
                "`return fminf(acc, v);` (min)")
    assert in_scope_examples(contract, []) == contract


def test_no_example_in_scope_renamed_or_dropped():
    renames = {"y": "out", "idx": "out", "D": "(H * W)"}
    renamed = in_scope_examples(FINALIZE, ["x", "out", "B", "N", "H", "W"], renames)
    assert renamed.endswith("e.g. `out[o * (H * W) + c] = acc;` (sum) "
                            "or `out[o * (H * W) + c] = arg;` (argmax)"), renamed
    dropped = in_scope_examples(FINALIZE, ["x", "out", "B", "N", "H", "W"])
    assert dropped.endswith("write output (o, c)"), dropped
    contract = "the length of the reduced axis, e.g. `N`"
    assert in_scope_examples(contract, ["rows", "cols"]) == "the length of the reduced axis"


def test_examples_with_prose_and_parentheses_are_split_whole():
    contract = ("`float accumulate(PARAMS, float acc, float v, int c, int k)`: return acc, e.g. "
                "`return fmaxf(acc, v);`, or for depthwise weights w (C, 3) `return acc + w[c * 3 + k] * v;`")
    assert in_scope_examples(contract, ["x", "y"]).endswith("e.g. `return fmaxf(acc, v);`")
    assert in_scope_examples(contract, ["x", "y", "w"]) == contract


def test_stand_ins_map_a_slots_lone_example_to_kagents_fill_and_stores_to_the_one_output():
    contracts = {"INNER": "the dims after, e.g. `D`", "R": "the reduced axis, e.g. `N`", "FINALIZE": FINALIZE}
    renames = stand_ins(contracts, {"INNER": "H * W", "R": "N"}, ["x", "out", "N", "H", "W"], ["out"])
    assert renames == {"D": "(H * W)", "y": "out", "idx": "out"}
    assert "y" not in stand_ins(contracts, {}, ["x", "a", "b"], ["a", "b"])  # two outputs: which one is not known


def test_the_argmin_port_prompt_shows_the_example_that_writes_idx_only():
    task = load_task(ROOT / "tasks" / "naive" / "argmin_dim.yaml")
    view = skeleton_view(library()["axis_reduce"], task)
    finalize = next(s for s in view["slots"] if s["name"] == "FINALIZE")["contract"]
    assert "`idx[o * D + c] = arg;`" in finalize and "y[" not in finalize


def test_examples_labelled_with_the_tasks_words_are_the_ones_kept():
    contract = ("`float`: the start value, e.g. `0.f` (sum, mean), `INFINITY` (min, argmin), "
                "`-INFINITY` (max, argmax)")
    assert in_scope_examples(contract, [], task_words={"argmin", "dim"}).endswith("e.g. `INFINITY` (min, argmin)")
    assert in_scope_examples(contract, [], task_words={"mean"}).endswith("e.g. `0.f` (sum, mean)")
    assert in_scope_examples(contract, [], task_words={"prod"}) == contract  # no label shares a word: all stay


def test_a_long_parenthesis_is_not_a_label():
    contract = ("`float finalize(PARAMS, float acc, int count, int c)`: e.g. `return acc;`, or for a window of 4 "
                "averaged `return acc / 4.f;` (`return acc / count;` to leave the padding out)")
    assert in_scope_examples(contract, [], task_words={"window", "padding", "leave"}) == contract


def test_the_mean_port_prompt_shows_the_mean_examples():
    task = load_task(ROOT / "tasks" / "naive" / "mean_dim.yaml")
    view = {s["name"]: s["contract"] for s in skeleton_view(library()["axis_reduce"], task)["slots"]}
    assert view["IDENTITY"].endswith("e.g. `0.f` (sum, mean)")
    assert view["FINALIZE"].endswith("e.g. `y[o * D + c] = acc / N;` (mean)")


def test_a_slot_the_worked_example_fills_keeps_only_the_examples_labelled_with_the_tasks_operation():
    contract = "`float`: the start value, e.g. `-INFINITY` (max), `0.f` (sum, average, convolution)"
    assert in_scope_examples(contract, [], task_words={"averag", "pool"}, telling_only=True) \
        .endswith("e.g. `0.f` (sum, average, convolution)")
    # no label shares a word with the task: the worked example alone shows the form
    assert in_scope_examples(contract, [], task_words={"median"}, telling_only=True) == "`float`: the start value"


def test_the_avgpool_port_prompt_under_a_maxpool_example_shows_the_average_not_the_max():
    task = load_task(ROOT / "tasks" / "naive" / "avgpool2d.yaml")
    view = {s["name"]: s["contract"] for s in skeleton_view(library()["window2d"], task,
                                                            shown=frozenset({"IDENTITY", "FINALIZE"}))["slots"]}
    assert view["IDENTITY"].endswith("e.g. `0.f` (sum, average, convolution)")
    assert view["FINALIZE"].endswith("e.g. `return acc / count;` (average, avgpool)")
    assert "INFINITY" not in view["IDENTITY"] and "3" not in view["KH"]  # geometry: the task's own number


def test_a_code_slot_names_its_scope_and_its_signature_drops_the_params_stand_in():
    """The small model's commonest compile error was a name not in scope (the naive kernel's locals,
    the example's names, `PARAMS` copied from the signature): each code slot lists what is in scope."""
    from kernel_agent.llm.porting import port_prompt_context
    from kernel_agent.llm.prompts import render

    task = load_task(ROOT / "tasks" / "naive" / "frobenius_norm.yaml")
    view = {s["name"]: s for s in skeleton_view(library()["full_reduce"], task)["slots"]}
    assert view["TERM"]["contract"].startswith("`float term(long long i, float va, float vb)`")
    assert view["TERM"]["scope"] == {"params": ["x", "y", "N", "C", "H", "W"], "arguments": ["i", "va", "vb"]}
    prompt = render("port.j2", **port_prompt_context(task, "", library()["full_reduce"], []))
    assert "In scope in TERM: x, y, N, C, H, W (the task's parameters); i, va, vb (its arguments)." in prompt
    assert "PARAMS" not in prompt
    maxpool = load_task(ROOT / "tasks" / "naive" / "maxpool1d.yaml")
    window = skeleton_view(library()["window1d"], maxpool)["slots"]
    assert all((s["scope"] is None) == (s["name"] not in ("ACCUMULATE", "FINALIZE")) for s in window)


def test_a_parameter_shadowed_by_a_slot_argument_is_in_scope_only_as_the_argument():
    task = load_task(ROOT / "tasks" / "naive" / "matvec.yaml")  # its matrix is `a`, like COMBINE(a, b)'s
    view = {s["name"]: s for s in skeleton_view(library()["row_scan"], task)["slots"]}
    assert view["COMBINE"]["scope"]["arguments"] == ["a", "b"] and "a" not in view["COMBINE"]["scope"]["params"]
    assert "a" in view["LOAD"]["scope"]["params"]


def test_the_worked_example_is_written_in_the_tasks_names():
    """The local model copied `out[0] = total;` from full_sum's worked example into kl_div_loss, whose
    output is `loss` (seventh round: a third of its compile errors were the example's names). The
    example now uses the task's names where the two tasks' shapes bind them alike, and says so."""
    from kernel_agent.llm.porting import example_fill, example_names, port_prompt_context
    from kernel_agent.llm.prompts import render
    from kernel_agent.skeletons import suite_task

    kl = load_task(ROOT / "tasks" / "naive" / "kl_div_loss.yaml")
    full = library()["full_reduce"]
    full_sum = suite_task("full_sum")
    assert full_sum is not None
    assert example_names(full, full_sum, kl) == {"n": "(batch * n)", "x": "predictions", "out": "loss"}
    example = example_fill(full, kl)
    assert example is not None and example["task"] == "full_sum"
    assert "loss[0] = total;" in example["fills"] and "out" not in example["fills"]
    prompt = render("port.j2", **port_prompt_context(kl, "", full, []))
    assert "This is full_sum's math, not the math of your task, written with your task's names" in prompt
    residual = load_task(ROOT / "tasks" / "naive" / "matmul_scale_residual.yaml")
    shown = example_fill(library()["matmul"], residual)
    assert shown is not None and "y[row * out_features + col] = acc;" in shown["fills"]


def test_a_name_the_example_declares_or_a_slot_argument_is_never_a_rename_target():
    from kernel_agent.llm.contract_examples import renamed_code
    from kernel_agent.llm.porting import example_names
    from kernel_agent.skeletons import suite_task

    # declared, called and member names keep theirs; the others are renamed all at once
    assert renamed_code("const float x = y[i]; s.y += x + f(y); y = z;", {"x": "q", "y": "z", "z": "y", "f": "g"}) \
        == "const float x = z[i]; s.y += x + f(z); z = y;"
    gelu, softplus = suite_task("gelu"), load_task(ROOT / "tasks" / "naive" / "softplus.yaml")
    assert gelu is not None
    elementwise = library()["elementwise"]
    renames = example_names(elementwise, gelu, softplus)
    arguments = {"i"}  # VALUE(i)'s argument
    assert not (set(renames) & arguments) and not (set(renames.values()) & arguments)
    shadowing = softplus.model_copy(update={"params": ["i", "y", "n"], "inputs": {"i": softplus.inputs["x"]},
                                            "dims": softplus.dims})
    assert "x" not in example_names(elementwise, gelu, shadowing)  # its input would be the argument i


def test_fresh_samples_of_a_skeleton_take_turns_among_the_examples_that_write_alike():
    """A fresh sample of a skeleton gets the next worked example that writes its outputs as the task
    must (the local model sent the same fills word for word at a wider temperature): matvec's rowwise
    samples go round row_sum and cross_entropy; a skeleton with one such example keeps it."""
    from kernel_agent.llm.porting import example_fill

    task = load_task(ROOT / "tasks" / "naive" / "matvec.yaml")
    shown = [e["task"] for k in range(6) if (e := example_fill(library()["rowwise"], task, sample=k))]
    turn = shown.index(shown[0], 1)  # the pool's size: back to the first
    assert len(set(shown[:turn])) == turn >= 2 and shown[turn:] == shown[:6 - turn]
    kl = load_task(ROOT / "tasks" / "naive" / "kl_div_loss.yaml")
    assert {e["task"] for k in range(3) if (e := example_fill(library()["full_reduce"], kl, sample=k))} == {"full_sum"}


def test_an_example_with_names_the_task_lacks_is_not_in_turn_while_one_without_is_left(tmp_path):
    """rmsnorm's and layernorm's fills use `eps`, `weight`, `gamma`: shown to log_softmax, which has none of
    them, the local model copied them (3 of its 5 compile errors in the thirteenth round). Its samples keep
    to softmax; a task whose every example is foreign still gets one."""
    from kernel_agent.llm.porting import example_fill

    task = load_task(ROOT / "tasks" / "naive" / "log_softmax.yaml")
    assert {e["task"] for k in range(6) if (e := example_fill(library()["rowwise"], task, sample=k))} == {"softmax"}
    from kernel_agent.skeletons import LIBRARY

    for path in (LIBRARY / "examples").glob("*.md"):
        if path.stem != "softmax":
            (tmp_path / path.name).write_text(path.read_text())
    softmax_gone = example_fill(library()["rowwise"], task, folder=tmp_path)
    assert softmax_gone is not None and softmax_gone["task"] in {"rmsnorm", "layernorm"}


def test_an_example_a_failed_port_copied_is_withdrawn():
    from kernel_agent.llm.contract_examples import code_key
    from kernel_agent.llm.porting import skeleton_view
    from kernel_agent.skeletons import library

    task = load_task(ROOT / "tasks" / "naive" / "matmul_scale_residual.yaml")
    copy = "y[row * out_features + col] =\n  (acc + bias[col]) * scale;"
    before = skeleton_view(library()["matmul"], task, frozenset({"EPILOGUE"}))["slots"][0]["contract"]
    after = skeleton_view(library()["matmul"], task, frozenset({"EPILOGUE"}), [{"EPILOGUE": copy}])["slots"][0]
    assert "(acc + bias[col]) * scale;` (bias, scale)" in before
    assert "(bias, scale)" not in after["contract"] and "(bias, relu)" in after["contract"]
    assert code_key("return a + b;") == code_key("a +\n  b") and code_key("a+b") != code_key("a-b")
    assert code_key("y[(size_t)row * n + col] = acc;") == code_key("y[row * n + col] = acc") != code_key("y[row] = acc")
    assert code_key("y[(long long)row * n + col] = acc;") == code_key("y[( const int )row * n + col] = acc;") == \
        code_key("y[row * n + col] = acc")


def test_a_failed_copy_withdraws_examples_only_where_one_slot_is_asked():
    from kernel_agent.llm.porting import port_prompt_context

    cumsum = load_task(ROOT / "tasks" / "naive" / "masked_cumsum.yaml")
    first = port_prompt_context(cumsum, "naive", library()["row_scan"], [])
    copy = {slot: first["example"]["shown"][slot] for slot in first["example"]["slots"]}
    again = port_prompt_context(cumsum, "naive", library()["row_scan"], [], failed=[copy])
    assert len(copy) > 1 and again["example"] == first["example"]  # which slot was wrong is unknown
    residual = load_task(ROOT / "tasks" / "naive" / "matmul_scale_residual.yaml")
    contract = "y[row * out_features + col] = (acc + bias[col]) * scale;"
    view = port_prompt_context(residual, "naive", library()["matmul"], [], failed=[{"EPILOGUE": contract}])
    assert "(bias, scale)" not in view["skeleton"]["slots"][0]["contract"]


def test_a_contracts_prose_says_the_given_slots_as_their_fills_and_leaves_its_code_alone():
    contract = ("`float term(PARAMS, long long i, float va, float vb)`: va is IN_A[i] over N values, "
                "e.g. `return IN_A[i];`")
    said = with_given_names(contract, {"IN_A": "predictions", "N": "batch * n"})
    assert said == ("`float term(PARAMS, long long i, float va, float vb)`: va is predictions[i] over (batch * n) "
                    "values, e.g. `return IN_A[i];`")
    assert with_given_names("over KK < K, of load_a(p, row, kk)", {"K": "k"}, {"load_a(p, row, kk)": "a[kk]"}) \
        == "over KK < k, of a[kk]"  # a name that is not a given slot stays
    assert with_given_names(contract, {}) == contract


def test_the_port_prompt_says_what_the_arguments_hold_in_the_tasks_names():
    """kl_div_loss's TERM got `va * (logf(vb) - logf(va))` from the local model (eleventh round): it had
    to chain `vb is IN_B[i]` with `IN_B = targets`. The contract now says `vb is targets[i]`; a matmul
    epilogue's acc is the sum of the task's own loads."""
    kl = skeleton_view(library()["full_reduce"], load_task(ROOT / "tasks" / "naive" / "kl_div_loss.yaml"))
    term = next(s for s in kl["slots"] if s["name"] == "TERM")["contract"]
    assert "va is predictions[i] and vb is targets[i]" in term and "IN_A" not in term
    fused = skeleton_view(library()["matmul"], load_task(ROOT / "tasks" / "naive" / "matmul_scale_residual.yaml"))
    epilogue = next(s for s in fused["slots"] if s["name"] == "EPILOGUE")["contract"]
    assert "the sum over kk < in_features of x[row * in_features + kk] * weight[col * in_features + kk]" in epilogue
    assert "row < batch, col < out_features" in epilogue


def test_a_fill_that_is_a_shown_example_with_an_index_cast_is_a_copy():
    """Round 14: the local model sent matmul_fp32's worked example `y[row * out_features + col] = acc;`
    with the naive kernel's `(size_t)` six times; read as a copy, its failure withdraws the example."""
    from kernel_agent.llm.porting import copied, fills_reader
    from kernel_agent.skeletons import library

    task = load_task(ROOT / "tasks" / "naive" / "matmul_scale_residual.yaml")
    text = "```EPILOGUE\ny[(size_t)row * out_features + col] = acc;\n```\n"
    parsed, port = fills_reader(library()["matmul"], task, {}, "h")(text, True)
    assert port is not None, parsed.feedback
    assert copied(port, task, "How fills look:\n```EPILOGUE\ny[row * out_features + col] = acc;\n```")
    assert not copied(port, task, "How fills look:\n```EPILOGUE\ny[col * batch + row] = acc;\n```")
