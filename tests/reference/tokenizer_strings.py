"""The hard strings every tokenizer reference fixture is computed on (shared by the
tokenizer_*.py scripts). Deterministic: a fixed list plus seeded random mixtures."""
import random

# Letters/digits from recent Unicode versions: they show whether our character tables follow
# the ones Hugging Face `tokenizers` uses (Oniguruma: Unicode 16; Rust is_numeric: Unicode 17).
KAWI_LETTER = "\U00011F04"          # Lo, Unicode 15.0
CJK_EXT_I = "\U0002EBF0"            # Lo, Unicode 15.1
GARAY_LETTER = "\U00010D50"         # Lu, Unicode 16.0
OL_ONAL_DIGIT = "\U0001E5F1"        # Nd, Unicode 16.0
TOLONG_SIKI_DIGIT = "\U00011DE3"    # Nd, Unicode 17.0: numeric for Digits, not \p{N} for the regex
NEW_LETTER_17 = "\U00000C5C"        # Lo, Unicode 17.0: not \p{L} in Oniguruma's tables

FIXED = [
    "", " ", "  ", "   ", "\t", "\n", "\r", "\r\n", "\n\n\n", " \n ", "\t\t x", "a  b", "a   b",
    "hello   ", "   hello", "hello\n", "\nhello", " \t \n \r\n x", "x\n\n\ny", "a\u00a0b",
    "x\u3000y", "line\u2028sep", "tab\tsep\tvalues", "  \r\n  x", "\n \n", "a \t\n b",
    "word\u00a0\u00a0word", " \u2009x", "\u200bzero\u200bwidth", "soft\u00adhyphen",
    "\ufeffBOM at start",
    "Hello world", "Hello, World!", "The quick brown fox jumps over the lazy dog.",
    "I'm sure they'll say it's fine, don't you think? We've seen it, you'd agree.",
    "IT'S THEY'LL WE'VE YOU'D I'M DON'T", "'s 't 're 've 'm 'll 'd", "rock'n'roll", "l'été",
    "'ſ long s", "''quoted''", "O'Reilly's book", "it’s curly",
    "1234567890", "3.14159", "1,000,000.00", "12345678901234567890123456789012345678901234567890",
    "version 2.0.1-rc3", "0x1F 0b1010 1e-9", "٣٤٥ Arabic-Indic", "①②③ circled", "½ ¾ ²³",
    "Ⅻ roman", "𝟙𝟚𝟛 math digits", "phone: +1 (555) 010-9999", "2024-01-31T12:34:56Z",
    "def foo(x):\n    return x ** 2  # comment",
    "for (int i = 0; i < n; ++i) {\n\tsum += a[i];\n}",
    "<html><body>&nbsp;<b>bold</b></body></html>", "SELECT * FROM t WHERE id='1';",
    '{"key": [1, 2, {"nested": null}], "s": "v\\n"}', "^(a+)+$ \\p{L}+ [^\\s]",
    'ls -la | grep "x" > /dev/null 2>&1', "x = y if z else w  # type: ignore",
    "    indented\n        more\n\tTabbed", "fn main() -> Result<(), Box<dyn Error>> {}",
    "https://example.com/path?q=1&r=two#frag", "user@example.com",
    "QUJDRA==/+base64+blob/AAAAAAAAAAAA", "__init__ __name__ == '__main__'",
    "Café naïve résumé façade Ångström", "e\u0301 decomposed", "n\u0303 vs ñ",
    "Z\u0351\u0352\u0353\u0354 stacked marks", "a\u0308\u0308\u0308", "\u0301 leading mark",
    "你好，世界！这是一个测试。", "日本語のテキストとカタカナ ー", "한국어 텍스트입니다",
    "ภาษาไทยไม่มีช่องว่าง", "नमस्ते दुनिया", "مرحبا بالعالم", "שלום עולם", "abc مرحبا 123 def",
    "Привет, мир!", "Ελληνικά γράμματα", "Ћирилица и Latinica", "ÄÖÜäöüß", "abc中文def",
    "word123word", "ＦＵＬＬ　ＷＩＤＴＨ", "😀", "👍🏽", "👨‍👩‍👧‍👦 family", "🇺🇸🇯🇵 flags",
    "❤️ heart", "1️⃣ keycap", "🏳️‍🌈", "🧑🏿‍🚀 astronaut", "emoji😀inside😀text",
    "∑∫√∞ ≠ ≤ ≥", "┌─┐│└┘", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "\ue000 private use", "\uffff noncharacter", "\ufffd",
    "\x00 NUL", "\x01\x02\x1f controls", "\x7f DEL", "\u0085 NEL",
    f"{KAWI_LETTER}{KAWI_LETTER} kawi", f"a{CJK_EXT_I}b", f"x{GARAY_LETTER}y",
    f"1{OL_ONAL_DIGIT}2", f"1{TOLONG_SIKI_DIGIT}2", f"a{NEW_LETTER_17}b",
    "<|im_start|>user\nHi<|im_end|>\n", "<|im_start|><|im_start|>", "<|im_end", "<|im_start|",
    "x<|endoftext|>y", " <|im_start|> ", "<repo_name>foo<file_sep>bar", "<|IM_START|>",
    "<<|im_start|>>", "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>assistant\n",
    "<s>Hello</s>", "<s> <s>", "say hello world twice: hello world", "a<tool>b <tool>", "</s>", "<unk>", "<mask> masked <mask>", "a<mask>b",
    "<0xZZ>", "<0x0A>", "Ġhello", "▁hello ▁▁", "\\x80\\xff", "&#x1F600;",
    "a" * 300, "supercalifragilisticexpialidocious" * 3, "ab" * 100, " " * 50 + "x",
    "\n" * 20, "!" * 40, "...", "?!?!", "--- *** ___", "(parens) [brackets] {braces}",
]


def random_strings(count=150, seed=1234):
    rng = random.Random(seed)
    pools = [
        "abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "0123456789",
        "     ", "\t\n\r", ".,;:!?-_'\"()[]{}<>/\\|@#$%^&*+=~`", "'", "éèàùçñöüßøå",
        "\u0301\u0308\u0327", "中文字符日本語", "한국어", "مرحبا", "Привет", "😀👍🏽❤️🇺🇸",
        "\u200d", "\u00a0\u3000\u2009", "٣٤٥①½", "ſ",
    ]
    specials = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<s>", "</s>", "<mask>"]
    out = []
    for _ in range(count):
        length = rng.randint(1, 40)
        parts = []
        for _ in range(length):
            if rng.random() < 0.03:
                parts.append(rng.choice(specials))
            else:
                parts.append(rng.choice(rng.choice(pools)))
        out.append("".join(parts))
    return out


PROSE = [
    "The quick brown fox jumps over the lazy dog while the cat sleeps in the warm sun.",
    "Tokenizers split text into pieces; byte pair encoding merges the most frequent pairs.",
    "In 2024 there were 1,234 reports, and 56.7% of them mentioned the number 42.",
    "def tokenize(text):\n    return [piece for piece in text.split()]\n",
    "Hello there! How are you doing today? I'm fine, thanks, and you're welcome.",
    "Les élèves étudient à l'école; ça va très bien. Über größere Straßen fahren Autos.",
    "这是一个简单的句子。日本語の文章もあります。한국어 문장도 있습니다.",
    "Мы говорим по-русски. Η γλώσσα είναι ελληνική. مرحبا بكم في العالم.",
    "    if (x > 0) {\n        y = x * 2;\n    }\n\treturn y;\n",
    "Emoji make text fun 😀😀 👍🏽 and flags 🇺🇸 appear too.",
]


def training_corpus():
    """Text the small reference tokenizers are trained on (prose repeated, then the strings)."""
    return PROSE * 20 + all_strings()


def all_strings():
    strings = list(FIXED) + random_strings()
    seen = set()
    unique = []
    for s in strings:
        if s not in seen:
            seen.add(s)
            unique.append(s)
    return unique


if __name__ == "__main__":
    print(len(all_strings()))
