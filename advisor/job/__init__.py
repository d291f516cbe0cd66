"""The job schema: every input of a plan declared once (see ``advisor.job.schema``)."""

from advisor.job.schema import (
    ASSUMPTION_FLAGS,
    JOB_FIELDS,
    FieldMeta,
    Job,
    JobInputError,
    assumption_meta,
    field_meta,
    json_schema,
)

__all__ = ["ASSUMPTION_FLAGS", "JOB_FIELDS", "FieldMeta", "Job", "JobInputError", "assumption_meta", "field_meta",
           "json_schema"]
