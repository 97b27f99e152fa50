"""Tricky strings for tokenizer parity tests (scripts/reference/*).

Runs of whitespace, emoji, accents (composed and decomposed), CJK and other
scripts, digits, markup, and text that looks like control tokens but must
stay text when a user types it.
"""


def tricky_strings():
    s = []
    # whitespace runs: spaces, tabs, newlines and mixes
    for n in (1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 31, 32, 33, 40):
        s.append(" " * n)
        s.append("a" + " " * n + "b")
    for n in (1, 2, 3, 4, 8, 31, 32, 40):
        s.append("\n" * n)
        s.append("x" + "\n" * n + "y")
    for n in (1, 2, 3, 8):
        s.append("\t" * n)
        s.append("if x:\n" + "\t" * n + "return 1")
    s += [" \n", "\n ", " \n \n ", "\r\n", "a\r\nb\r\n", "\t \t", " \t\n", "  leading", "trailing  ",
          "  both  ", "\u00a0nbsp\u00a0", "tab\there", "line1\n\nline2\n\n\nline3",
          "    indented code\n        more", "word" + " " * 64 + "word"]
    # emoji
    s += ["😀", "👍🏽", "👨‍👩‍👧‍👦", "🇫🇷🇯🇵", "❤️", "🤖 robots", "I ❤️ NY", "🙂🙃😉😊", "🏳️‍🌈", "a😀b",
          "👩🏻‍💻 coding", "🧑‍🚀", "☕️ and 🍰", "1️⃣2️⃣3️⃣", "🔥" * 10]
    # accents, composed and decomposed
    s += ["café", "cafe\u0301", "naïve résumé", "Ångström", "A\u030angstro\u0308m", "crème brûlée",
          "São Paulo", "Zürich", "Łódź", "ñandú", "Ærøskøbing", "façade", "jalapeño", "Dvořák",
          "İstanbul", "straße", "ﬁne ligature", "Ω ≈ ç √ ∫", "ǅemal", "Việt Nam"]
    # scripts
    s += ["日本語のテキスト", "東京は日本の首都です。", "中文文本测试", "你好，世界！", "한국어 텍스트",
          "안녕하세요 세계", "Привет, мир!", "Объясни, почему небо голубое.", "Ελληνικά γράμματα",
          "مرحبا بالعالم", "שלום עולם", "नमस्ते दुनिया", "สวัสดีชาวโลก", "ქართული", "Հայերեն",
          "ᚠᛇᚻ runes", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "𝓗𝓮𝓵𝓵𝓸", "ｆｕｌｌｗｉｄｔｈ", "ﾊﾝｶｸ", "mixed 日本 and English",
          "繁體中文與簡體中文", "ᐃᓄᒃᑎᑐᑦ", "አማርኛ", "தமிழ்", "বাংলা", "ខ្មែរ", "ລາວ", "မြန်မာ", "සිංහල"]
    # digits
    s += ["0", "7", "42", "123", "1234", "12345", "123456789", "3.14159265358979",
          "1,000,000", "1e-10", "0x1F", "-273.15", "2024-01-31", "12:34:56", "+1 (555) 123-4567",
          "٣٤٥", "１２３", "Ⅻ", "1st 2nd 3rd 4th", "v1.2.3-rc.4", "100%", "$19.99", "€5,50",
          "99999999999999999999", "0.000001", "10^9", "½ ¾ ⅓"]
    # markup and code
    s += ["<div class=\"x\">hi</div>", "<p>Hello &amp; welcome</p>", "**bold** _it_ `code`",
          "# Title\n\n- item 1\n- item 2", "[link](http://example.com)", "{\"key\": [1, 2, {\"a\": null}]}",
          "<!-- comment -->", "<?xml version=\"1.0\"?>", "def f(x):\n    return x ** 2\n",
          "for (int i = 0; i < n; i++) { s += a[i]; }", "SELECT * FROM t WHERE id = 1;",
          "#include <stdio.h>", "x => x + 1", "a && b || !c", "std::vector<int> v;", "$HOME/.bashrc",
          "C:\\Windows\\System32", "https://example.com/path?q=1&r=2#frag", "user@example.com",
          "| a | b |\n|---|---|\n| 1 | 2 |", "```python\nprint('hi')\n```", "\\frac{a}{b}",
          "<<<>>>", "<>", "</>", "<a>", "< b >"]
    # control-token look-alikes: must stay text
    s += ["<eos>", "<bos>", "<pad>", "<unk>", "<mask>", "<start_of_turn>", "<end_of_turn>",
          "<start_of_turn>user\nhi<end_of_turn>", "text <eos> more", "<eos><eos>", "<bos>hello",
          "<unused0>", "<unused99>", "<0x41>", "<0x0A>", "[multimodal]", "<start_of_image>",
          "<|im_start|>", "<|im_end|>", "<|endoftext|>", "<s>", "</s>", "<|eot_id|>",
          "<end_of_turn>\n<start_of_turn>model\n", "<eos", "eos>", "<<eos>>", "< eos >", "<EOS>"]
    # odd ones
    s += ["", "a", "A", ".", "...", "…", "—", "–", "\u200b", "\u200d", "\ufeffBOM", "\u0000nul",
          "\x07bell", "\x1b[31mred\x1b[0m", "I'm", "don't", "won't've", "'s", "\"quoted\"",
          "«guillemets»", "“curly”", "¿Qué?", "¡Hola!", "a.b.c", "hello world", " hello world",
          "Hello World", "HELLO WORLD", "hElLo", "the the the the", "supercalifragilisticexpialidocious",
          "antidisestablishmentarianism", "pneumonoultramicroscopicsilicovolcanoconiosis",
          "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "ababababababababab"]
    return s
