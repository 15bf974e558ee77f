# A word-level tokenizer: one token per whitespace-separated word, as the
# reference engine counts them. Vocabulary: the runner's prompt words and
# Faker's English word list (GuideLLM's synthetic text); any other word is
# [UNK], an ordinary token (not special), so decoding never drops a word.
import re, sys
from tokenizers import Tokenizer, models, pre_tokenizers, decoders
from transformers import PreTrainedTokenizerFast
src = open(sys.argv[1]).read()
words = re.search(r'strings\.Fields\(`([^`]*)`\)', src).group(1).split()
try:
    from faker.providers.lorem.en_US import Provider
    words += Provider.word_list
except ImportError:
    pass
vocab = {"[UNK]": 0, "<s>": 1, "</s>": 2}
for w in words:
    vocab.setdefault(w, len(vocab))
tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
tok.decoder = decoders.WordPiece(prefix="##", cleanup=False)
fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>")
fast.save_pretrained(sys.argv[2])
print(f"tokenizer: {len(vocab)} words in {sys.argv[2]}")
