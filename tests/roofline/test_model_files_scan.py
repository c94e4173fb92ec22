"""The model-file scan finds an engine started as `sglang serve --model-path DIR` (issue 26: such engines were
found but their model files never collected) and reads the real config a roofline prices."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from gpuaudit.probes.core.parsers.model_files import MODEL_FILES_SHELL, parse_model_files
from gpuaudit.probes.core.roofline.model import model_spec

pytestmark = pytest.mark.slow  # a stand-in process and the declared shell line

MODELS = Path(__file__).resolve().parents[1] / "fixtures" / "models"


@pytest.mark.parametrize(
    "argv",
    [
        ["sglang", "serve", "--model-path", "{dir}"],
        ["vllm", "serve", "{dir}", "--tensor-parallel-size", "1"],
    ],
    ids=["sglang-serve", "vllm-serve"],
)
def test_serve_style_engines_have_their_model_files_read(tmp_path, argv):
    model = tmp_path / "GLM-5-NVFP4"
    shutil.copytree(MODELS / "glm-5-nvfp4", model)
    args = [a.replace("{dir}", str(model)) for a in argv]
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", *args])
    try:
        time.sleep(0.3)
        out = subprocess.run(
            ["sh", "-c", MODEL_FILES_SHELL], capture_output=True, text=True, timeout=60
        ).stdout
    finally:
        proc.terminate()
        proc.wait(timeout=5)
    files = parse_model_files(out)
    assert files is not None and files.model == str(model), out[:400]
    config = files.json("config.json")
    assert config == json.loads((MODELS / "glm-5-nvfp4" / "config.json").read_text())
    assert model_spec(config, files.json("hf_quant_config.json")).layers == 78
