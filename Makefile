# openivm: build, demo, tests and benchmarks. Everything it needs comes from crates.io and PyPI into
# this directory (target/, .venv/, .venv-duckdb2/, .venv-bench/); nothing is installed globally.

EXT_NAME     := openivm
EXT_VERSION  := v$(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)
PLATFORM     := linux_amd64
PYTHON       ?= python3
VENV         := .venv
VENV_PY      := $(VENV)/bin/python
DUCKDB_CLI   := $(VENV)/bin/duckdb
EXTENSION    := build/release/$(EXT_NAME).duckdb_extension
# The PRAGMA companion (pragma/): loaded by the main file on DuckDB $(shell cat pragma/DUCKDB_VERSION) only.
COMPANION    := build/release/$(EXT_NAME)_pragma.duckdb_extension
DEBUG_EXT    := build/debug/$(EXT_NAME).duckdb_extension
VENV_STAMP   := $(VENV)/.installed
VENV2        := .venv-duckdb2
VENV2_STAMP  := $(VENV2)/.installed
BENCH_VENV   := .venv-bench
BENCH_PY     := $(BENCH_VENV)/bin/python
BENCH_STAMP  := $(BENCH_VENV)/.installed
BENCH_ARGS   ?=
SEED         ?= 42
BATCHES      ?= 500

.PHONY: all release debug venv venv2 demo demo2 test test-unit test-sql test-python test-differential test-corpus \
        test-compat test-sql-duckdb2 test-long venv-bench bench bench-quick bench-triggers clean

all: release

release: $(EXTENSION) $(COMPANION)

$(EXTENSION): $(shell find src sql -type f) Cargo.toml build.rs C_API_VERSION tools/append_footer.py $(VENV_STAMP)
	cargo build --release
	@mkdir -p build/release
	$(VENV_PY) tools/append_footer.py target/release/lib$(EXT_NAME).so $@ $(EXT_VERSION) $(PLATFORM)

# Its own Cargo workspace, so that its libduckdb-sys (2.0.1's v2 API) never unifies with the main crate's.
$(COMPANION): $(shell find pragma/src -type f) pragma/Cargo.toml pragma/Cargo.lock pragma/DUCKDB_VERSION tools/append_footer.py $(VENV_STAMP)
	cargo build --release --manifest-path pragma/Cargo.toml
	@mkdir -p build/release
	$(VENV_PY) tools/append_footer.py --unstable pragma/target/release/lib$(EXT_NAME)_pragma.so $@ $(EXT_VERSION) $(PLATFORM)

debug:
	cargo build
	@mkdir -p build/debug
	$(PYTHON) tools/append_footer.py target/debug/lib$(EXT_NAME).so $(DEBUG_EXT) $(EXT_VERSION) $(PLATFORM)

venv: $(VENV_STAMP)

# Each environment is rebuilt from scratch whenever its requirements file changes; the stamp
# records that the install finished (an interrupted install leaves no stamp and is redone).
$(VENV_STAMP): test/requirements.txt
	rm -rf $(VENV)
	$(PYTHON) -m venv $(VENV)
	$(VENV_PY) -m pip install --quiet --disable-pip-version-check -r test/requirements.txt
	@touch $@

venv2: $(VENV2_STAMP)

$(VENV2_STAMP): test/requirements-duckdb2.txt
	rm -rf $(VENV2)
	$(PYTHON) -m venv $(VENV2)
	$(VENV2)/bin/python -m pip install --quiet --disable-pip-version-check -r test/requirements-duckdb2.txt
	@touch $@

# Loads the extension into the DuckDB 1.5.5 CLI and shows a view before and after a refresh.
demo: release
	$(DUCKDB_CLI) -unsigned < demo/demo.sql

# The reference design's script on DuckDB 2.0.1 (Python): PRAGMA forms and SET openivm_fk_pruning.
demo2: release $(VENV2_STAMP)
	$(VENV2)/bin/python demo/demo_duckdb2.py $(EXTENSION)

# Every suite; the last line is "N passed, M failed" over all of them.
test: release $(VENV2_STAMP)
	$(VENV_PY) test/run_all.py --extension $(EXTENSION) --seed $(SEED) --batches $(BATCHES) --duckdb2 $(VENV2)/bin/python

test-unit:
	$(VENV_PY) tools/layers.py
	cargo test --release --lib
	cargo test --release --doc

test-sql: release
	$(VENV_PY) test/runner/sqllogictest.py --extension $(EXTENSION)

test-python: release
	$(VENV_PY) -m unittest discover -s test/python -v

test-differential: release
	$(VENV_PY) test/differential/differential.py --extension $(EXTENSION) --seed $(SEED) --batches $(BATCHES)

# Every TPC-H and TPC-DS query as a maintained view, refreshed after random batches and compared
# with a recompute (test/corpus/corpus.py); `make test` runs the TPC-H part.
# Each seed is a new database whose views are refreshed in random orders and at random rates.
test-corpus: release
	$(VENV_PY) test/corpus/corpus.py --extension $(EXTENSION) --suite tpch --sf 0.01 --batches 6 --seeds 3
	$(VENV_PY) test/corpus/corpus.py --extension $(EXTENSION) --suite tpcds --sf 0.01 --batches 2

# The long campaign (test/campaign.py): differential and TPC-H corpus runs, seed after seed, until
# MINUTES pass or CAMPAIGN_BATCHES batches ran; failing runs' output goes to test/tmp/campaign/.
MINUTES          ?= 60
CAMPAIGN_BATCHES ?= 100000
CAMPAIGN_SEED    ?= 1000
test-long: release $(VENV2_STAMP)
	$(VENV_PY) test/campaign.py --extension $(EXTENSION) --minutes $(MINUTES) --batches $(CAMPAIGN_BATCHES) --seed $(CAMPAIGN_SEED)
	$(VENV_PY) test/campaign.py --extension $(EXTENSION) --minutes $(MINUTES) --batches $(CAMPAIGN_BATCHES) --seed $(CAMPAIGN_SEED) \
	    --python $(VENV2)/bin/python --no-corpus --out test/tmp/campaign-duckdb2

# The sqllogictest suite on DuckDB 2.0 (informational: a few records assert 1.5.5's own behaviour).
test-sql-duckdb2: release $(VENV2_STAMP)
	$(VENV2)/bin/python test/runner/sqllogictest.py --extension $(EXTENSION)

test-compat: release $(VENV2_STAMP)
	$(VENV2)/bin/python test/python/compat_check.py $(EXTENSION)

venv-bench: $(BENCH_STAMP)

# The benchmark's environment: DuckDB, the TPC-H extension wheel and matplotlib (bench/requirements.txt).
$(BENCH_STAMP): bench/requirements.txt
	rm -rf $(BENCH_VENV)
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_PY) -m pip install --quiet --disable-pip-version-check -r bench/requirements.txt
	@touch $@

# Refresh against recompute on every workload (see bench/README.md); results in bench/results/.
# Pass options through BENCH_ARGS, e.g. make bench BENCH_ARGS="--only star --runs 7".
# Then the trigger source on DuckDB 2.0.1 at the sizes of its targets (bench/trigger_source.py).
bench: release $(BENCH_STAMP) $(VENV2_STAMP)
	$(BENCH_PY) bench/run.py --extension $(EXTENSION) $(BENCH_ARGS)
	$(VENV2)/bin/python bench/trigger_source.py --extension $(EXTENSION) --rows 20000000 --batches 3 \
	    --tpch-python $(BENCH_PY)

# The same code at small sizes, 3 runs: asserts correctness, nothing about time (bench/results/quick/).
bench-quick: release $(BENCH_STAMP) $(VENV2_STAMP)
	$(BENCH_PY) bench/run.py --quick --extension $(EXTENSION) $(BENCH_ARGS)
	$(VENV2)/bin/python bench/trigger_source.py --extension $(EXTENSION) --rows 200000 --write-rows 200000 \
	    --views-rows 200000 --views 5 --batches 2 --sf 0.01 --tpch-python $(BENCH_PY) \
	    --out bench/results/quick/trigger_source.md

# The trigger source on DuckDB 2.0.1 against recompute (bench/trigger_source.py); results in
# bench/results/trigger_source.md. Pass options through BENCH_ARGS, e.g. BENCH_ARGS="--rows 20000000".
bench-triggers: release $(VENV2_STAMP)
	$(VENV2)/bin/python bench/trigger_source.py --extension $(EXTENSION) $(BENCH_ARGS)

clean:
	cargo clean
	cargo clean --manifest-path pragma/Cargo.toml
	rm -rf build
