# wordpiece-probe-ref.py OUT: how `tokenizers` BertNormalizer / BertPreTokenizer treat every
# non-ASCII code point alone (one line each: hex cp, removed by clean_text, whitespace, punctuation,
# split as whitespace, the strip_accents result, the lowercase result); make-wordpiece-tables.py
# compares it with wick's utf8proc-based answer (wordpiece-probe.c, same columns).
import sys
from tokenizers import normalizers, pre_tokenizers
clean = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=False, strip_accents=False, lowercase=False)
strip = normalizers.BertNormalizer(clean_text=False, handle_chinese_chars=False, strip_accents=True, lowercase=False)
lower = normalizers.BertNormalizer(clean_text=False, handle_chinese_chars=False, strip_accents=False, lowercase=True)
pre = pre_tokenizers.BertPreTokenizer()
import unicodedata
out = open(sys.argv[1], "w")
for cp in range(0x80, 0x110000):
    if 0xD800 <= cp <= 0xDFFF: continue
    ch = chr(cp)
    c = clean.normalize_str("a" + ch + "a")
    other = 1 if c == "aa" else 0
    ws = 1 if c == "a a" and ch != " " else 0
    p = pre.pre_tokenize_str("a" + ch + "a")
    punct = 1 if len(p) == 3 and p[1][0] == ch else 0
    splitws = 1 if len(p) == 2 else 0
    s = strip.normalize_str(ch)
    lo = lower.normalize_str(ch)
    out.write("%x %d %d %d %d %s %s\n" % (cp, other, ws, punct, splitws, ".".join("%x" % ord(x) for x in s) or "-", ".".join("%x" % ord(x) for x in lo) or "-"))
