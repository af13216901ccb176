# Two commands on a fresh machine: `make demo` and `make test`. Both set up .venv first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test test-oldest tools bench docs clean

# Where torch comes from: pip's own settings by default; on a plain PyPI machine, Linux gets torch's CUDA build
# (gigabytes), so `make test TORCH_INDEX=https://download.pytorch.org/whl/cpu` asks for the CPU one.
TORCH_INDEX ?=

$(STAMP): pyproject.toml setup.py src/skelanim/io/_bvh_numbers.c
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet torch==2.13.0 $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

# Browser and glTF-validator tests need Debian's Chromium and Node packages in tools/ (npm registry); the Blender
# peer tests need Blender's bpy (PyPI, Python 3.11, NumPy 1.x) in its own environment, tools/blender/.venv.
BLENDER_VENV := tools/blender/.venv
tools: $(STAMP)
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium >/dev/null; \
	  elif command -v sudo >/dev/null 2>&1; then sudo apt-get update -qq && sudo apt-get install -y -qq chromium >/dev/null; \
	  else echo "note: chromium not installed; browser tests will skip"; fi; }
	@if command -v npm >/dev/null 2>&1; then \
	  [ tools/node_modules/.package-lock.json -nt tools/package-lock.json ] || (cd tools && npm ci --silent --no-audit --no-fund); \
	  else echo "note: npm not found; glTF validator tests will skip"; fi
	@if $(PYTHON) -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then \
	  [ $(BLENDER_VENV)/.installed -nt tools/blender/requirements.txt ] || { rm -rf $(BLENDER_VENV) && \
	    $(PYTHON) -m venv $(BLENDER_VENV) && $(BLENDER_VENV)/bin/pip install --quiet -r tools/blender/requirements.txt && \
	    touch $(BLENDER_VENV)/.installed; } || echo "note: Blender's bpy did not install; the Blender peer tests will skip"; \
	  else echo "note: Blender's bpy needs Python 3.11; the Blender peer tests will skip"; fi

demo: $(STAMP)
	$(VENV)/bin/skelanim demo --out out/demo

test: $(STAMP) tools
	$(PY) -m pytest -n 2 -q

# The oldest NumPy the project admits (pyproject: numpy>=1.26), in its own environment: the array-handling tests under
# it (mypy's check needs the current NumPy's type stubs and is left out). CI runs it after `make test`.
OLDEST := .venv-oldest
$(OLDEST)/.installed: pyproject.toml setup.py src/skelanim/io/_bvh_numbers.c
	rm -rf $(OLDEST)
	$(PYTHON) -m venv $(OLDEST)
	$(OLDEST)/bin/python -m pip install --quiet torch==2.13.0 numpy==1.26.4 $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(OLDEST)/bin/python -m pip install --quiet -e '.[test]' numpy==1.26.4
	touch $@

test-oldest: $(OLDEST)/.installed
	$(OLDEST)/bin/python -m pytest -n 2 -q -p no:cacheprovider tests/io tests/core tests/ops tests/data tests/metrics

docs: $(STAMP)
	$(PY) docs/api.py out/docs/api

bench: $(STAMP)
	$(PY) benchmarks/bvh_io.py

clean:
	rm -rf $(VENV) $(OLDEST) $(BLENDER_VENV) out .pytest_cache .hypothesis
