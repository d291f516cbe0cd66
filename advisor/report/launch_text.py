"""What every launch text shares: the one-line error, SkyPilot's names for catalog parts and clouds, and the
quoting that keeps a document's values data in a comment, a launcher's word or a YAML task
(``report.launch``'s training specs, ``report.serve_launch``'s servers, ``report.serve_bench``'s benchmarks)."""

from __future__ import annotations

# Catalog id -> SkyPilot accelerator name.
SKYPILOT_ACCELERATORS = {
    "h100-sxm": "H100", "h100-pcie": "H100", "h100-nvl": "H100-NVL", "h200": "H200", "gh200-96gb": "GH200",
    "b200": "B200", "a100-40gb-sxm": "A100", "a100-80gb-sxm": "A100-80GB", "a100-80gb-pcie": "A100-80GB",
    "v100-sxm2-16gb": "V100", "v100-pcie-16gb": "V100", "v100-sxm2-32gb": "V100-32GB", "t4": "T4", "l4": "L4",
    "l40s": "L40S", "a10g": "A10G", "a10": "A10", "rtx-a6000": "A6000", "rtx-6000-ada": "RTX6000-Ada",
    "rtx-3090": "RTX3090", "rtx-4090": "RTX4090", "rtx-5090": "RTX5090", "mi300x": "MI300X", "mi325x": "MI325X",
    "gaudi2": "Gaudi2", "gaudi3": "Gaudi3", "trainium1": "Trainium", "trainium2": "Trainium2",
    "inferentia2": "Inferentia2", "tpu-v4": "tpu-v4-8", "tpu-v5e": "tpu-v5litepod-1", "tpu-v5p": "tpu-v5p-8",
    "tpu-v6e": "tpu-v6e-1",
}
# Provider names (lower case) in option ids -> SkyPilot cloud names; others are left for SkyPilot to choose.
SKYPILOT_CLOUDS = {"aws": "aws", "gcp": "gcp", "azure": "azure", "lambda": "lambda", "runpod": "runpod",
                   "vast.ai": "vast", "vast": "vast", "oci": "oci", "paperspace": "paperspace", "nebius": "nebius",
                   "fluidstack": "fluidstack", "cudo": "cudo", "digitalocean": "do", "coreweave": "kubernetes"}


class LaunchError(ValueError):
    """The option cannot be launched as asked (unknown id, no time estimate, unknown kind); one line."""


def comment_text(text) -> str:
    """One line of printable text for a comment: control characters (newline, carriage return, line and
    paragraph separators) become ``?``, so the text cannot leave the comment."""
    return "".join(c if c.isprintable() else "?" for c in str(text))


def path_word(path: str) -> str:
    """A file path as a launcher's word that cannot be read as an option: ``./--x`` for ``--x`` (the same
    file; a quoted word is still an option to the program that parses it)."""
    path = str(path)
    return "./" + path if path.startswith("-") else path


def yaml_text(data: dict) -> str:
    """YAML text of ``data`` by the PyYAML emitter (safe dumper; multi-line strings as literal blocks)."""
    import yaml

    class _Dumper(yaml.SafeDumper):
        pass

    def _str(dumper, value):
        style = "|" if "\n" in value else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    _Dumper.add_representer(str, _str)
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, default_flow_style=False, allow_unicode=False,
                     width=10_000)
