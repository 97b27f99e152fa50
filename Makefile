# wick - build. `make` builds build/wick; `make test` runs the whole suite
# (see scripts/test); `make unit` and `make asan` run the unit tests in the
# release and the AddressSanitizer+UBSan builds; `make fuzz` builds the
# libFuzzer targets with clang.

CC       ?= cc
BUILD    ?= build
VARIANT  ?= release
OUT      := $(BUILD)/$(VARIANT)

# -ffp-contract=off: no a * b + c fused into an FMA unless the code asks
# (clang fuses by default); one source built for several ISAs must give
# the same bits.
CFLAGS_BASE := -std=c11 -D_GNU_SOURCE -g -Wall -Wextra -Wno-unused-parameter \
               -Wstrict-prototypes -Werror=implicit-function-declaration -fno-strict-aliasing -MMD -MP \
               -ffp-contract=off
ifeq ($(VARIANT),asan)
  CFLAGS_OPT := -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
  LDFLAGS_SAN := -fsanitize=address,undefined
else
  CFLAGS_OPT := -O2 -fvect-cost-model=dynamic -DNDEBUG
endif
CFLAGS  += $(CFLAGS_BASE) $(CFLAGS_OPT)
LDLIBS  := $(shell pkg-config --libs jansson libpcre2-8 libutf8proc libmicrohttpd libcrypto libcurl 2>/dev/null || echo -ljansson -lpcre2-8 -lutf8proc -lmicrohttpd -lcrypto -lcurl) -lm -lpthread
APP_LDLIBS := $(shell pkg-config --libs libedit 2>/dev/null || echo -ledit)

AVX2_FLAGS   := -mavx2 -mfma -mf16c
AVX512_FLAGS := $(AVX2_FLAGS) -mavx512f -mavx512bw -mavx512vl -mavx512dq
VNNI_FLAGS   := $(AVX512_FLAGS) -mavx512vnni
AMX_FLAGS    := $(VNNI_FLAGS) -mamx-tile -mamx-int8 -mamx-bf16 -mavx512bf16

LIB_SRC    := $(wildcard src/*/*.c)
AVX2_SRC   := $(wildcard src/cpu/arch/x86/avx2/*.c)
AVX512_SRC := $(filter-out %_vnni.c %_amx.c,$(wildcard src/cpu/arch/x86/avx512/*.c))
VNNI_SRC   := $(wildcard src/cpu/arch/x86/avx512/*_vnni.c)
AMX_SRC    := $(wildcard src/cpu/arch/x86/avx512/*_amx.c)
# The sanitizer build on a CPU without AVX-512 leaves those kernels out: they could not
# run under its tests (the release build compiles them everywhere). avx512_absent.c
# gives their entry points, which nothing calls there; on a 2-core Zen 1 this saves
# ~250 of the ASan build's ~500 CPU s.
AVX512 := $(shell grep -qw avx512f /proc/cpuinfo 2>/dev/null && echo yes)
ifeq ($(VARIANT):$(AVX512),asan:)
  AVX512_SRC := src/cpu/arch/x86/avx512_absent.c
  VNNI_SRC   :=
  AMX_SRC    :=
endif
APP_SRC    := $(wildcard app/*.c)
UNIT_SRC   := $(wildcard tests/unit/test-*.c)
GOLDEN_SRC := $(wildcard tests/golden/test-*.c)
BENCH_SRC  := $(wildcard bench/*.c)

# the SIMD kernels first: a few of them take most of a build (on a 2-core Zen 1,
# under ASan, rows_x16_avx512_vnni.c 151 s and r16_avx2.c 96 s of ~500 s in all),
# so with -j they start at once and the small files fill the other core beside them
LIB_OBJ  := $(patsubst %.c,$(OUT)/%.o,$(VNNI_SRC) $(AVX2_SRC) $(AMX_SRC) $(AVX512_SRC) $(LIB_SRC))
APP_OBJ  := $(patsubst %.c,$(OUT)/%.o,$(APP_SRC))
UNIT_BIN := $(patsubst tests/unit/%.c,$(OUT)/tests/%,$(UNIT_SRC))
GOLDEN_BIN := $(patsubst tests/golden/%.c,$(OUT)/tests/%,$(GOLDEN_SRC))
BENCH_BIN  := $(patsubst bench/%.c,$(OUT)/bench/%,$(BENCH_SRC))
LIB      := $(OUT)/libwick.a

.PHONY: all wick unit golden asan test fuzz bench clean format
all: $(OUT)/wick $(UNIT_BIN) $(GOLDEN_BIN)
ifeq ($(VARIANT),release)
	@ln -sf release/wick $(BUILD)/wick
endif

$(OUT)/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC  $<"
	@$(CC) $(CFLAGS) -c $< -o $@

$(OUT)/src/cpu/arch/x86/avx2/%.o: src/cpu/arch/x86/avx2/%.c
	@mkdir -p $(dir $@)
	@echo "  CC  $<"
	@$(CC) $(CFLAGS) $(AVX2_FLAGS) -c $< -o $@

$(OUT)/src/cpu/arch/x86/avx512/%_vnni.o: src/cpu/arch/x86/avx512/%_vnni.c
	@mkdir -p $(dir $@)
	@echo "  CC  $<"
	@$(CC) $(CFLAGS) $(VNNI_FLAGS) -c $< -o $@

$(OUT)/src/cpu/arch/x86/avx512/%_amx.o: src/cpu/arch/x86/avx512/%_amx.c
	@mkdir -p $(dir $@)
	@echo "  CC  $<"
	@$(CC) $(CFLAGS) $(AMX_FLAGS) -c $< -o $@

$(OUT)/src/cpu/arch/x86/avx512/%.o: src/cpu/arch/x86/avx512/%.c
	@mkdir -p $(dir $@)
	@echo "  CC  $<"
	@$(CC) $(CFLAGS) $(AVX512_FLAGS) -c $< -o $@

# The elementwise ops (ops_template.h, GELU included), and BERT's softmax (bert.c): their clamps and selects only
# if-convert, and so vectorise, when comparisons may not trap; wick never
# reads the floating-point exception flags.
$(OUT)/src/cpu/ops.o $(OUT)/src/cpu/arch/x86/avx2/ops_avx2.o \
  $(OUT)/src/cpu/arch/x86/avx512/ops_avx512.o $(OUT)/src/model/bert.o: CFLAGS += -fno-trapping-math

# The model family registry: every WK_FAMILY(id) line of src/model/*.c
# as WK_FAMILY_ENTRY(id), sorted (model.c includes it), so a family is
# one file. Rewritten when the list changes, so model.c rebuilds then only.
FAMILY_IDS := $(sort $(shell sed -n 's/^WK_FAMILY(\([a-z0-9_]*\)).*/\1/p' src/model/*.c))
FAMILIES_H := $(OUT)/gen/families.gen.h
$(FAMILIES_H): FORCE
	@mkdir -p $(dir $@)
	@printf 'WK_FAMILY_ENTRY(%s)\n' $(FAMILY_IDS) > $@.tmp
	@cmp -s $@.tmp $@ && rm -f $@.tmp || mv $@.tmp $@
$(OUT)/src/model/model.o: $(FAMILIES_H)
$(OUT)/src/model/model.o: CFLAGS += -I$(OUT)/gen
.PHONY: FORCE
FORCE:

$(LIB): $(LIB_OBJ)
	@rm -f $@
	@echo "  AR  $@"
	@ar rcs $@ $^

$(OUT)/wick: $(APP_OBJ) $(LIB)
	@echo "  LD  $@"
	@$(CC) $(LDFLAGS_SAN) -o $@ $(APP_OBJ) $(LIB) $(APP_LDLIBS) $(LDLIBS)

$(OUT)/tests/%: tests/unit/%.c tests/unit/check.h tests/unit/cpu_blocks.h tests/unit/grammar_util.h $(LIB)
	@mkdir -p $(dir $@)
	@echo "  LD  $@"
	@$(CC) $(CFLAGS) $(LDFLAGS_SAN) -o $@ $< $(LIB) $(LDLIBS)

$(OUT)/tests/jinja-render: tests/template/render.c $(LIB)
	@mkdir -p $(dir $@)
	@echo "  LD  $@"
	@$(CC) $(CFLAGS) $(LDFLAGS_SAN) -o $@ $< $(LIB) $(LDLIBS)

$(OUT)/tests/%: tests/golden/%.c tests/unit/check.h $(LIB)
	@mkdir -p $(dir $@)
	@echo "  LD  $@"
	@$(CC) $(CFLAGS) $(LDFLAGS_SAN) -o $@ $< $(LIB) $(LDLIBS)

wick: $(OUT)/wick
ifeq ($(VARIANT),release)
	@ln -sf release/wick $(BUILD)/wick
endif

$(OUT)/bench/%: bench/%.c $(LIB)
	@mkdir -p $(dir $@)
	@echo "  LD  $@"
	@$(CC) $(CFLAGS) -o $@ $< $(LIB) $(LDLIBS)

# Benchmarks (figures, not tests): build/release/bench/*
bench: $(BENCH_BIN)

# Golden tests (need scripts/fetch-models first, except the tiny Qwen 3 of
# tests/golden/qwen3, Qwen 2 of tests/golden/qwen2, GLM-4-MoE-Lite of tests/golden/glm4-moe-lite,
# Gemma 4 of tests/golden/gemma4, the Llama of tests/golden/llama3-rope, the
# Llama-shaped families of tests/golden/llamalike and the Granite 3 (dense, MoE),
# OLMo 2 and SmolLM3 of tests/golden/{granite,granitemoe,olmo2,smollm3}):
# greedy decoding and
# tricky strings against each fixture, then tokenizer parity on the corpus,
# for each model's tokenizer from its GGUF and from the exported tokenizer.json.
MODELS_DIR := $(or $(WICK_CACHE),$(HOME)/.cache/wick)/models
GOLDEN_DIR := $(BUILD)/golden
PARITY     := gemma3:gemma-3-270m-q4_k_m.gguf smollm2:SmolLM2-135M-Instruct.Q4_1.gguf \
              qwen2.5-coder:qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
# The runs with the dispatch capped to AVX2 (WICK_CPU=avx2) test the AVX2 kernels on a CPU that
# has AVX-512; on one without, they are the default runs again, so they are skipped there.
CAP_AVX2 := $(if $(AVX512),WICK_CPU=avx2,:)
CAP_NOTE := $(if $(AVX512),, (skipped: no AVX-512 here, the default run is the AVX2 one))
golden: $(GOLDEN_BIN)
	@echo "== qwen2: a tiny Qwen2ForCausalLM (HF folder, with and without its sliding window, and llama.cpp's GGUF) against transformers"; \
	  $(OUT)/tests/test-qwen2
	@echo "== qwen2, f32 activations (WICK_EXACT=1)"; WICK_EXACT=1 $(OUT)/tests/test-qwen2 test_logits
	@echo "== qwen3: a tiny Qwen3ForCausalLM (HF folder and GGUF) against transformers"; $(OUT)/tests/test-qwen3
	@echo "== qwen3, f32 activations (WICK_EXACT=1)"; WICK_EXACT=1 $(OUT)/tests/test-qwen3
	@echo "== glm4-moe-lite: a tiny Glm4MoeLiteForCausalLM (HF folder, GGUF deepseek2 and glm4moelite) against transformers"; \
	  $(OUT)/tests/test-glm4-moe-lite
	@echo "== glm4-moe-lite, f32 activations (WICK_EXACT=1)"; WICK_EXACT=1 $(OUT)/tests/test-glm4-moe-lite
	@echo "== qwen3-moe: a tiny Qwen3MoeForCausalLM (HF folder and llama.cpp's GGUF) against transformers"; $(OUT)/tests/test-qwen3-moe
	@echo "== qwen3-moe, f32 activations (WICK_EXACT=1)"; WICK_EXACT=1 $(OUT)/tests/test-qwen3-moe test_logits
	@echo "== gemma4: tiny Gemma 4 models (dense, MoE; HF folders and llama.cpp GGUFs) and MTP assistants against transformers"; \
	  $(OUT)/tests/test-gemma4
	@echo "== gemma4, dispatch capped to AVX2 (WICK_CPU=avx2)$(CAP_NOTE)"; \
	  $(CAP_AVX2) $(OUT)/tests/test-gemma4 test_logits && $(CAP_AVX2) $(OUT)/tests/test-gemma4 test_assistant
	@echo "== llama3-rope: a tiny LlamaForCausalLM with Llama 3 RoPE scaling (HF folder, transformers 4 config, llama.cpp's GGUF) against transformers"; \
	  $(OUT)/tests/test-llama3-rope
	@echo "== llama3-rope, f32 activations (WICK_EXACT=1)"; WICK_EXACT=1 $(OUT)/tests/test-llama3-rope test_logits
	@echo "== gemma2: a tiny Gemma2ForCausalLM (attention and final softcaps, alternating sliding window; HF folder and llama.cpp's GGUF) against transformers"; \
	  $(OUT)/tests/test-gemma2
	@echo "== llamalike: tiny Mistral, Mistral-Nemo, Mixtral, Falcon 3, EXAONE 3.5, InternLM 3, R1 distills (HF folders and llama.cpp's GGUFs) against transformers"; \
	  $(OUT)/tests/test-llamalike
	@echo "== llamalike, f32 activations (WICK_EXACT=1)"; WICK_EXACT=1 $(OUT)/tests/test-llamalike test_logits
	@echo "== granite-olmo2-smollm3: tiny Granite 3 (multipliers), Granite 3 MoE, OLMo 2 (post-norms, full-width QK norm) and SmolLM3 (NoPE layers) models (HF folders and llama.cpp's GGUFs) against transformers"; \
	  $(OUT)/tests/test-granite-olmo2-smollm3
	@echo "== granite-olmo2-smollm3, f32 activations (WICK_EXACT=1)"; WICK_EXACT=1 $(OUT)/tests/test-granite-olmo2-smollm3 _logits
	@echo "== phi3: tiny Phi3ForCausalLM models (LongRoPE long and short, attention factor, partial rotary, sliding window, fused QKV and gate-up; HF folders and llama.cpp's GGUFs) against transformers"; \
	  $(OUT)/tests/test-phi3
	@echo "== phi3, f32 activations (WICK_EXACT=1)"; WICK_EXACT=1 $(OUT)/tests/test-phi3 test_logits
	@echo "== gpt-oss: a tiny GptOssForCausalLM (sinks, sliding window, YaRN, biased clamped-SwiGLU experts; HF folder, llama.cpp's GGUF, and that GGUF with MXFP4 experts) against transformers"; \
	  $(OUT)/tests/test-gpt-oss
	@echo "== gpt-oss, f32 activations (WICK_EXACT=1)"; WICK_EXACT=1 $(OUT)/tests/test-gpt-oss test_logits
	@echo "== gpt-oss, dispatch capped to AVX2 (WICK_CPU=avx2)$(CAP_NOTE)"; $(CAP_AVX2) $(OUT)/tests/test-gpt-oss test_logits
	@echo "== gpt-oss MXFP4 experts, f32 activations (WICK_EXACT=1)"; WICK_EXACT=1 $(OUT)/tests/test-gpt-oss test_mxfp4
	@echo "== gpt-oss MXFP4 experts, dispatch capped to AVX2 (WICK_CPU=avx2)$(CAP_NOTE)"; $(CAP_AVX2) $(OUT)/tests/test-gpt-oss test_mxfp4
	@echo "== tf5-bos: BOS/EOS from tokenizer.json's post-processor (transformers 5 folders) against tokenizers"; \
	  $(OUT)/tests/test-tf5-bos
	@set -e; for f in tests/golden/qwen2.5-coder-1.5b.json tests/golden/gemma3-270m.json tests/golden/smollm2-135m.json; do \
	  echo "== golden $$f"; $(OUT)/tests/test-golden $$f; \
	  echo "== golden $$f, f32 activations (WICK_EXACT=1), the first 16 steps of each case"; \
	  WICK_EXACT=1 WICK_GOLDEN_STEPS=16 $(OUT)/tests/test-golden $$f; \
	  echo "== golden $$f, dispatch capped to AVX2 (WICK_CPU=avx2)$(CAP_NOTE)"; $(CAP_AVX2) $(OUT)/tests/test-golden $$f; \
	done
	@echo "== logprobs"; $(OUT)/tests/test-logprobs tests/golden/logprobs.json
	@echo "== tokenizer cases"; $(OUT)/tests/test-tokenizer-cases tests/golden/tokenizer-cases.json $(MODELS_DIR)
	@mkdir -p $(GOLDEN_DIR)
	@xz -dc tests/golden/tokenizer-corpus.jsonl.xz > $(GOLDEN_DIR)/corpus.jsonl
	@set -e; for m in $(PARITY); do name=$${m%%:*}; file=$${m#*:}; \
	  echo "== tokenizer parity $$name"; \
	  xz -dc tests/golden/tokenizer-ids-$$name.jsonl.xz > $(GOLDEN_DIR)/ids-$$name.jsonl; \
	  python3 scripts/reference/gguf_to_tokenizer_json.py $(MODELS_DIR)/$$file $(GOLDEN_DIR)/tj-$$name; \
	  $(OUT)/tests/test-tokenizer-parity $(GOLDEN_DIR)/corpus.jsonl $(GOLDEN_DIR)/ids-$$name.jsonl \
	    $(MODELS_DIR)/$$file $(GOLDEN_DIR)/tj-$$name; \
	done
	@echo "== tokenizer parity minilm (WordPiece, the folder's tokenizer.json)"; \
	  xz -dc tests/golden/tokenizer-ids-minilm.jsonl.xz > $(GOLDEN_DIR)/ids-minilm.jsonl; \
	  $(OUT)/tests/test-tokenizer-parity $(GOLDEN_DIR)/corpus.jsonl $(GOLDEN_DIR)/ids-minilm.jsonl - \
	    $(MODELS_DIR)/all-MiniLM-L6-v2
	@echo "== embed: all-MiniLM-L6-v2 (BERT, WordPiece, mean pooling) against sentence-transformers"; \
	  xz -dc tests/golden/minilm/embeddings.json.xz > $(GOLDEN_DIR)/minilm-embeddings.json; \
	  $(OUT)/tests/test-embed $(MODELS_DIR)/all-MiniLM-L6-v2 $(GOLDEN_DIR)/minilm-embeddings.json \
	    tests/golden/minilm/wordpiece-cases.json tests/golden/minilm/retrieval.json
	@echo "== decoder embeddings: SmolLM2-135M (last-token, mean and CLS pooling) against llama.cpp's llama-embedding"; \
	  xz -dc tests/golden/smollm2-embed/embeddings.json.xz > $(GOLDEN_DIR)/smollm2-embeddings.json; \
	  $(OUT)/tests/test-decoder-embed $(MODELS_DIR)/SmolLM2-135M-Instruct.Q4_1.gguf $(GOLDEN_DIR)/smollm2-embeddings.json
	@if [ -f $(MODELS_DIR)/all-MiniLM-L6-v2-f32.gguf ]; then \
	  echo "== embed: llama.cpp's bert GGUF of it (scripts/reference/make-minilm-gguf.sh)"; \
	  $(OUT)/tests/test-embed $(MODELS_DIR)/all-MiniLM-L6-v2-f32.gguf $(GOLDEN_DIR)/minilm-embeddings.json \
	    tests/golden/minilm/wordpiece-cases.json tests/golden/minilm/retrieval.json; \
	  echo "== tokenizer parity minilm, llama.cpp's BERT vocabulary from that GGUF"; \
	  $(OUT)/tests/test-tokenizer-parity $(GOLDEN_DIR)/corpus.jsonl $(GOLDEN_DIR)/ids-minilm.jsonl \
	    $(MODELS_DIR)/all-MiniLM-L6-v2-f32.gguf $(MODELS_DIR)/all-MiniLM-L6-v2; \
	else echo "== embed: no all-MiniLM-L6-v2-f32.gguf (scripts/reference/make-minilm-gguf.sh makes it): its run skipped"; fi

# Unit tests of this variant.
unit: $(UNIT_BIN)
	@set -e; for t in $(UNIT_BIN); do echo "== $$t"; s=$$(date +%s); $$t; \
	  e=$$(( $$(date +%s) - s )); if [ $$e -ge 3 ]; then echo "   ($$t: $$e s)"; fi; done
	@echo "== $(OUT)/tests/test-cpu and test-cpu-r16, dispatch capped to AVX2 (WICK_CPU=avx2)$(CAP_NOTE)"
	@$(CAP_AVX2) $(OUT)/tests/test-cpu && $(CAP_AVX2) $(OUT)/tests/test-cpu-r16
	@echo "== $(OUT)/tests/test-cpu-r16, the R16 decode kernels with and without software prefetches (WICK_PREFETCH=1, 0; the second run with the AMX GEMM's int8 tiles for the 4-bit types, WICK_AMX_BF16=0)"
	@WICK_PREFETCH=1 $(OUT)/tests/test-cpu-r16 && WICK_PREFETCH=0 WICK_AMX_BF16=0 $(OUT)/tests/test-cpu-r16

# Unit tests under AddressSanitizer + UndefinedBehaviorSanitizer.
asan:
	$(MAKE) VARIANT=asan unit

test:
	scripts/test

# libFuzzer targets (clang): build/fuzz/fuzz-gguf, build/fuzz/fuzz-safetensors, ...
# each with a scratch corpus folder build/fuzz/corpus-<target> beside the shared build/fuzz/corpus
FUZZ_SRC := $(wildcard tests/fuzz/fuzz-*.c)
fuzz: $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(FUZZ_SRC))
FUZZ_LIB_SRC := $(LIB_SRC) tests/fuzz/no_simd.c
$(BUILD)/fuzz/%: tests/fuzz/%.c $(FUZZ_LIB_SRC) $(FAMILIES_H)
	@mkdir -p $(dir $@) $(BUILD)/fuzz/corpus $(BUILD)/fuzz/corpus-$*
	@echo "  FUZZ $@"
	@clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -I$(OUT)/gen \
	  -o $@ $< $(FUZZ_LIB_SRC) $(LDLIBS)

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD)

-include $(LIB_OBJ:.o=.d) $(APP_OBJ:.o=.d)

.DELETE_ON_ERROR:
