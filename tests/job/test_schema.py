"""The job schema: each input declared once with its range, and the one-line errors it gives."""

from __future__ import annotations

import timeit

import pytest
from pydantic import ValidationError

from advisor.catalog import PRECISIONS
from advisor.estimate import memory
from advisor.job import ASSUMPTION_FLAGS, JOB_FIELDS, Job, JobInputError, assumption_meta, field_meta, json_schema, schema


def test_choices_are_the_estimates_own():
    assert field_meta("workload").choices == memory.WORKLOADS == schema.WORKLOADS
    assert field_meta("precision").choices == PRECISIONS == schema.PRECISIONS
    assert field_meta("optimizer").choices == memory.OPTIMIZERS
    assert field_meta("checkpointing").choices == memory.CHECKPOINTING
    assert field_meta("quant").choices == tuple(memory.QUANT_BITS)


def test_every_field_has_help_kind_and_a_range_when_numeric():
    for name, meta in JOB_FIELDS.items():
        assert meta.help and meta.kind in ("int", "number", "text", "choice", "bool", "ids", "table"), name
        assert set(meta.workloads) <= set(schema.WORKLOADS) and meta.workloads, name
        if meta.kind in ("int", "number"):
            assert meta.minimum is not None and meta.maximum is not None, f"{name} has no range"
        if meta.flag is not None:
            assert meta.flag.startswith("--")
    assert field_meta("seq_len").flag == "--seq-len" and field_meta("assumptions").flag is None
    assert field_meta("spot_offers").flag == "--no-spot"
    assert list(JOB_FIELDS)[:3] == ["model", "params", "active_params"]
    assert json_schema()["properties"]["gpus"]["anyOf"][0]["maximum"] == 16384


def test_assumption_flags_come_from_the_cost_assumptions():
    for name in ASSUMPTION_FLAGS:
        a = assumption_meta(name)
        assert a.unit and a.help and a.origin
    assert assumption_meta("electricity_usd_per_kwh").value == 0.17


def test_defaults_and_changed():
    job = Job.from_mapping({"model": "llama-3-8b", "gpus": 8.0, "accelerator": "h100-sxm", "batch": None})
    assert job.gpus == 8 and isinstance(job.gpus, int) and job.accelerator == ("h100-sxm",)
    assert job.pp == 1 and job.workload == "pretrain" and job.output_tokens == 256
    assert job.changed() == {"model": "llama-3-8b", "gpus": 8, "accelerator": ["h100-sxm"]}
    with pytest.raises(ValidationError):  # frozen
        job.gpus = 2  # type: ignore[misc]


@pytest.mark.parametrize("values, field, words", [
    ({"params": 0.5}, "params", r"between 1000000 and 1e\+15"),
    ({"params": 7e9, "tokens": 1e308}, "tokens", "at most|between"),
    ({"params": 7e9, "hours": 1e308}, "hours", "at most 1000000"),
    ({"params": 7e9, "batch": 1e300}, "batch", "whole number"),
    ({"params": 7e9, "gpus": 0}, "gpus", "between 1 and 16384"),
    ({"params": 7e9, "gpus": True}, "gpus", "whole number"),
    ({"params": 7e9, "zero": 4}, "zero", "one of 0, 1, 2, 3"),
    ({"params": 7e9, "precision": "fp3"}, "precision", "one of fp32"),
    ({"params": 7e9, "tokens": float("nan")}, "tokens", "finite"),
    ({"params": "7e9"}, "params", "finite number"),
    ({"model": 7}, "model", "string"),
    ({"params": 7e9, "mfu": 1.05}, "mfu", "above 0 and at most 1"),
    ({"params": 7e9, "accelerator": ["x\ntouch pwned"]}, "accelerator", "not an accelerator id"),
    ({"params": 7e9, "spot_offers": 1}, "spot_offers", "true or false"),
    ({"params": 7e9, "colour": 1}, "colour", "unknown plan field"),
    ({"params": 7e9, "assumptions": {"pue": -1}}, "assumptions", "pue"),
    ({"params": 7e9, "epochs": 2}, "epochs", "go together"),
    ({"params": 7e9, "tokens": 1e9, "hours": 3}, "hours", "one budget"),
    ({"params": 7e9, "gpus": 6, "tp": 4}, "gpus", "cannot be split"),
    ({"params": 7e9, "precision": "int4"}, "precision", "qlora"),
    ({}, "model", "preset"),
])
def test_bad_values_give_one_line_naming_the_field(values, field, words):
    import re

    with pytest.raises(JobInputError) as info:
        Job.from_mapping(values)
    msg = str(info.value)
    assert info.value.field == field and msg.startswith(f"{field}: ") and "\n" not in msg
    assert re.search(words, msg), msg


def test_validation_is_cheap():
    # Once per request, not per option: well under a millisecond for a typical request.
    values = {"model": "llama-3-8b", "workload": "lora", "tokens": 2e8, "accelerator": ["rtx-4090"]}
    per_call = min(timeit.repeat(lambda: Job.from_mapping(values), number=200, repeat=3)) / 200
    assert per_call < 5e-4
