"""Tests of the training code against the ORIGINAL implementation's fixtures.

  /usr/bin/python3 -m pytest tools/train/test_train.py   (or: /usr/bin/python3 tools/train/test_train.py)

Data comes only from tests/data and models/rexuninlu_tiny (never from ../shared)."""
import json
import os
import random
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import rexdata as R  # noqa: E402
from tokenizer import BertTokenizer  # noqa: E402

TINY = f"{ROOT}/models/rexuninlu_tiny"
DATA = f"{ROOT}/tests/data"


def jsonl(path):
    return [json.loads(l) for l in open(path, encoding="utf-8").read().split("\n") if l.strip()]


TOK = BertTokenizer(f"{TINY}/vocab.txt")
FORWARD = jsonl(f"{DATA}/rexuninlu_tiny/forward_cases.jsonl")
E2E = {c["id"]: c for c in jsonl(f"{DATA}/rexuninlu_tiny/e2e_cases.jsonl")}


def _opts(case):
    o = case.get("options", {})
    return o.get("max_len", 512), o.get("stride", 32), o.get("hint_max_len", 256)


class TokenizerTest(unittest.TestCase):
    def test_vocab_cases(self):
        cases = jsonl(f"{DATA}/rexuninlu_vocab_cases.jsonl")
        ok = sum(1 for c in cases if list(map(list, TOK.encode(c["text"])[1])) == c["offsets"]
                 and TOK.encode(c["text"])[0] == c["input_ids"])
        # 2532 / 2533 measured; the one miss is U+10FFFF, which the Rust normaliser keeps
        self.assertGreaterEqual(ok, len(cases) - 1, f"{ok}/{len(cases)}")


class PromptTest(unittest.TestCase):
    def test_forward_case_inputs(self):
        for f in FORWARD:
            c = E2E[f["id"]]
            max_len, stride, hml = _opts(c)
            hint, _ = R.build_hints(TOK, {(): c["schema"]}, hint_max_len=hml)[0]
            self.assertEqual(hint, f["hint"], f["id"])
            ids, offs = TOK.tokenize(c["text"])
            is_cls = any(m in c["text"] for m in R.MARKERS)
            w = R.windows(TOK, hint, ids, offs, stride=0 if is_cls else stride, max_len=max_len)[0]
            self.assertEqual(w["input_ids"], f["input_ids"], f["id"])
            self.assertEqual([list(o) for o in w["offsets"]], f["offsets"], f["id"])
            self.assertEqual(w["H"], f["token_type_ids"].count(0), f["id"])
            pos, ps, ts = R.segments(TOK, w["input_ids"])
            self.assertEqual(pos, f["position_ids"], f["id"])
            mask = ["".join(map(str, r)) for r in R.dense_mask(ps, ts)]
            self.assertEqual(mask, f["attention_mask"], f["id"])


class LabelTest(unittest.TestCase):
    def test_re_labels_by_hand(self):
        # Hand-checked: text tokens start at H; 张三 = chars 0-1, 北大 = chars 5-6.
        text = "张三毕业于北大。"
        sample = {"text": text, "schema": {"人物": {"毕业院校(组织机构)": None, "配偶(人物)": None}},
                  "info_list": [[{"type": "人物", "span": "张三", "offset": [0, 2]},
                                 {"type": "毕业院校(组织机构)", "span": "北大", "offset": [5, 7]}]]}
        inst = R.training_instances(TOK, sample, random.Random(0))
        self.assertEqual(len(inst), 2)
        # level 0: hint [PREFIX][TYPE]人物 -> [CLS]=0 [PREFIX]=1 [TYPE]=2 人=3 物=4 [SEP]=5, text from 6
        ids, H, rows, cols = inst[0]
        self.assertEqual(H, 6)
        self.assertEqual(ids[:3], [TOK.cls_id, TOK.vocab["[PREFIX]"], TOK.vocab["[TYPE]"]])
        self.assertEqual((rows, cols), ([6, 6, 2], [7, 2, 7]))  # 张->三, 张->[TYPE], [TYPE]->三
        # level 1: '[PREFIX]人物: 张三[TYPE]毕业院校(组织机构)[TYPE]配偶(人物)'
        ids, H, rows, cols = inst[1]
        hint_tokens = [TOK.inv_vocab[i] for i in ids[1:H - 1]]
        self.assertEqual(hint_tokens[:7], ["[PREFIX]", "人", "物", ":", "张", "三", "[TYPE]"])
        t_grad = 7  # [TYPE] of 毕业院校(组织机构) (types sorted: 毕... < 配...)
        self.assertEqual(ids[t_grad], TOK.vocab["[TYPE]"])
        self.assertEqual(TOK.inv_vocab[ids[t_grad + 1]], "毕")
        head, tail = H + 5, H + 6  # 北, 大
        self.assertEqual((rows, cols), ([head, head, t_grad], [tail, t_grad, tail]))

    def test_classification_labels(self):
        text = "[CLASSIFY]很好用"
        sample = {"text": text, "schema": {"正向情感": None, "负向情感": None},
                  "info_list": [[{"type": "正向情感", "span": "[CLASSIFY]", "offset": [0, 10]}]]}
        (ids, H, rows, cols), = R.training_instances(TOK, sample, random.Random(0))
        self.assertEqual(ids[H], TOK.vocab["[CLASSIFY]"])
        self.assertEqual((rows, cols), ([H, H, 2], [H, 2, H]))  # [TYPE]正向情感 is token 2


try:
    import torch
    import st_io
    from decode import Predictor
    from model import RexModel, circle_loss
    from batching import make_batch
except ImportError:  # pragma: no cover
    torch = None


def tiny_model(dtype):
    cfg = json.load(open(f"{TINY}/config.json"))
    sd = st_io.load(f"{TINY}/model.safetensors")
    cfg["vocab_size"] = sd["plm.embeddings.word_embeddings.weight"].shape[0]
    m = RexModel(cfg).to(dtype).eval()
    m.load_state_dict({k: v.to(dtype) for k, v in sd.items()}, strict=True)
    return m


@unittest.skipIf(torch is None, "torch not installed")
class ModelTest(unittest.TestCase):
    def test_forward_fixture(self):
        m = tiny_model(torch.float64)
        for f in FORWARD:
            ids = torch.tensor([f["input_ids"]])
            pos = torch.tensor([f["position_ids"]])
            M = torch.tensor([[[int(c) for c in r] for r in f["attention_mask"]]])
            with torch.no_grad():
                z, h = m(ids, M, pos, return_hidden=True)
            self.assertLess(float((h[0] - torch.tensor(f["hidden"], dtype=torch.float64)).abs().max()), 1e-6, f["id"])
            self.assertLess(float((z[0] - torch.tensor(f["logits"], dtype=torch.float64)).abs().max()), 1e-5, f["id"])

    def test_padded_batch_equals_single(self):
        m = tiny_model(torch.float64)
        seqs = [f["input_ids"] for f in FORWARD[:5]]
        ids, mask, pos, _ = make_batch(TOK, seqs, "cpu")
        with torch.no_grad():
            z = m(ids, mask, pos)
        for b, f in enumerate(FORWARD[:5]):
            n = len(f["input_ids"])
            ref = torch.tensor(f["logits"], dtype=torch.float64)
            self.assertLess(float((z[b, :n, :n] - ref).abs().max()), 1e-5, f["id"])

    def test_e2e_pipeline(self):
        m = tiny_model(torch.float32)
        for c in E2E.values():
            max_len, stride, hml = _opts(c)
            p = Predictor(m, TOK, "cpu", max_len=max_len, stride=stride, hint_max_len=hml, max_prefixes=10 ** 9)
            got = p.predict([{"text": c["text"], "schema": c["schema"]}])[0]
            self.assertEqual(got, c["expected"], c["id"])

    def test_circle_loss(self):
        # one positive cell with logit 2, one negative with logit -1 (and padding ignored):
        z = torch.tensor([[[2.0, -1.0], [50.0, 50.0]]])
        y = torch.tensor([[[1.0, 0.0], [0.0, 0.0]]])
        valid = torch.tensor([[[True, True], [False, False]]])
        expect = torch.log1p(torch.exp(torch.tensor(-1.0))) + torch.log1p(torch.exp(torch.tensor(-2.0)))
        self.assertAlmostEqual(float(circle_loss(z, y, valid)), float(expect), places=5)


class MlmMaskTest(unittest.TestCase):
    def test_only_ordinary_tokens_are_masked(self):
        from train import mask_tokens
        seq = TOK.encode("[CLASSIFY]北京欢迎你，上海也欢迎你")[0]
        ids = torch.tensor([seq + [0, 0]])
        valid = torch.tensor([[True] * len(seq) + [False, False]])
        special = torch.tensor([TOK.vocab[t] for t in TOK.specials])
        gen = torch.Generator()
        gen.manual_seed(0)
        out, pick = mask_tokens(ids, valid, special, TOK.vocab["[MASK]"], (106, 12800), gen, rate=1.0)
        ordinary = valid & ~torch.isin(ids, special)
        self.assertTrue(torch.equal(pick, ordinary))  # rate 1: every ordinary token, nothing else
        self.assertTrue(torch.equal(out[~pick], ids[~pick]))
        self.assertGreater(int((out[pick] == TOK.vocab["[MASK]"]).sum()), 0)


class ResumeTest(unittest.TestCase):
    """A run stopped after 3 steps and resumed from its checkpoint ends with exactly the weights
    of the same run done in one go (6 steps of the tiny size, CPU, 2 epochs of 4 batches)."""

    def test_resume_equals_one_go(self):
        import gzip
        import subprocess
        import tempfile
        import st_io
        with tempfile.TemporaryDirectory() as d:
            rng = random.Random(0)
            with gzip.open(f"{d}/instances.jsonl.gz", "wt", encoding="utf-8") as f:
                for c in list(E2E.values())[:8]:
                    gold = [[{k: it[k] for k in ("type", "span", "offset")} for it in path] for path in c["expected"]]
                    for ids, H, rows, cols in R.training_instances(TOK, dict(c, info_list=gold), rng):
                        f.write(json.dumps({"ids": ids, "H": H, "rows": rows, "cols": cols}) + "\n")

            def train(out, *extra):
                subprocess.run([sys.executable, f"{HERE}/train.py", "--size", "tiny", "--data", d, "--out", out,
                                "--vocab", f"{TINY}/vocab.txt", "--total-steps", "6", "--warmup-steps", "2",
                                "--batch-tokens", "1024", "--eval-seconds", "0", "--minutes", "10", *extra],
                               check=True, capture_output=True)

            train(f"{d}/one")
            train(f"{d}/two", "--call-steps", "3")
            stopped = json.load(open(f"{d}/two/eval.json"))
            self.assertEqual((stopped["steps"], stopped["finished"]), (3, False))
            train(f"{d}/two", "--resume", f"{d}/two/checkpoint.pt")
            done = json.load(open(f"{d}/two/eval.json"))
            self.assertEqual((done["steps"], done["finished"]), (6, True))
            a, b = st_io.load(f"{d}/one/model.safetensors"), st_io.load(f"{d}/two/model.safetensors")
            self.assertEqual(sorted(a), sorted(b))
            for k in a:
                self.assertTrue(torch.equal(a[k], b[k]), k)


@unittest.skipIf(torch is None, "torch not installed")
class StackInitTest(unittest.TestCase):
    """train.stack_init: a deeper model from a shallower one's weights (--init with --size deeper):
    layer i copies layer i*n//L (interleave) or i%n (repeat); the other tensors stay; the deeper
    model loads the result strictly."""

    def test_stack_tiny_two_into_four(self):
        from model import RexModel, config_for
        from train import stack_init
        src = RexModel(config_for(64, 2, 4, 128)).state_dict()
        for mode, order in (("interleave", [0, 0, 1, 1]), ("repeat", [0, 1, 0, 1])):
            sd = stack_init(src, 4, mode)
            RexModel(config_for(64, 4, 4, 128)).load_state_dict(sd, strict=True)
            for i, j in enumerate(order):
                for k, v in src.items():
                    if k.startswith(f"plm.encoder.layer.{j}."):
                        self.assertTrue(torch.equal(sd[k.replace(f"layer.{j}.", f"layer.{i}.", 1)], v), (mode, i, k))
            for k, v in src.items():
                if not k.startswith("plm.encoder.layer."):
                    self.assertTrue(torch.equal(sd[k], v), k)
        with self.assertRaises(ValueError):
            stack_init(src, 1)


@unittest.skipIf(torch is None, "torch not installed")
class AverageTest(unittest.TestCase):
    """average.py: the element-wise mean of the models' weights (F16 out), and a clear refusal of
    models whose tensor names or shapes differ."""

    def test_mean_and_mismatch(self):
        import subprocess
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            a = {"w": torch.tensor([[1.0, 2.0], [3.0, -4.0]]).half(), "b": torch.tensor([0.5, 1.0]).half()}
            b = {"w": torch.tensor([[2.0, 2.0], [0.0, 4.0]]).half(), "b": torch.tensor([0.25, -1.0]).half()}
            st_io.save(a, f"{d}/a.safetensors")
            st_io.save(b, f"{d}/b.safetensors")
            st_io.save({"w": a["w"]}, f"{d}/c.safetensors")
            subprocess.run([sys.executable, f"{HERE}/average.py", "--out", f"{d}/m.safetensors",
                            f"{d}/a.safetensors", f"{d}/b.safetensors"], check=True, capture_output=True)
            m = st_io.load(f"{d}/m.safetensors")
            self.assertEqual(m["w"].dtype, torch.float16)
            self.assertTrue(torch.equal(m["w"], torch.tensor([[1.5, 2.0], [1.5, 0.0]]).half()))
            self.assertTrue(torch.equal(m["b"], torch.tensor([0.375, 0.0]).half()))
            r = subprocess.run([sys.executable, f"{HERE}/average.py", "--out", f"{d}/x.safetensors",
                                f"{d}/a.safetensors", f"{d}/c.safetensors"], capture_output=True, text=True)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("c.safetensors: tensor names or shapes differ", r.stderr)


class LabelVariationTest(unittest.TestCase):
    def test_held_out_names_never_train(self):
        import labels as L
        train_names = {n for names in L.TRAIN_NAMES.values() for n in names}
        self.assertFalse(set(L.HELD_OUT.values()) & train_names)
        for fam, concepts in L.CONCEPT.items():
            for t, c in concepts.items():
                self.assertIn(t, L.TRAIN_NAMES[c], (fam, t))  # converted names are training names

    def test_vary_keeps_mentions_and_renames_consistently(self):
        import labels as L
        text = "马云于1999年在杭州创办了阿里巴巴集团，任职董事局主席。"
        s = {"id": "x", "text": text, "schema": {t: None for t in L.CONCEPT["cluener"]},
             "info_list": [[{"type": "人名", "span": "马云", "offset": [0, 2]}],
                           [{"type": "地址", "span": "杭州", "offset": [9, 11]}],
                           [{"type": "公司", "span": "阿里巴巴集团", "offset": [14, 20]}]]}
        rng = random.Random(1)
        seen = set()
        for _ in range(300):
            v = L.vary(s, "cluener", rng)
            for (item,) in v["info_list"]:
                self.assertIn(item["type"], v["schema"])
                self.assertEqual(text[item["offset"][0]:item["offset"][1]], item["span"])
                seen.add((item["span"], item["type"]))
            for t in v["schema"]:
                self.assertNotIn(t, L.HELD_OUT.values())
            # a negative type is never a name of an annotated concept
            kept = {item["span"] for (item,) in v["info_list"]}
            self.assertLessEqual(len(v["info_list"]), 3)
            self.assertTrue(kept <= {"马云", "杭州", "阿里巴巴集团"})
        self.assertIn(("马云", "人物"), seen)
        self.assertIn(("杭州", "地理位置"), seen)
        self.assertIn(("阿里巴巴集团", "组织机构"), seen)  # the coarse (official example) view
        self.assertIn(("阿里巴巴集团", "公司"), seen)


class ConvertDataTest(unittest.TestCase):
    """The larger evaluation sets' converters on hand-written lines (no ../shared data)."""

    def test_aste_line_multichar_tokens_and_implicit_aspect(self):
        import convert_data as C
        # tokens "价格" and "18" span two code points; (-1, -1) = implicit aspect -> the "#" prefix
        line = "价格 也 就 18 元 ， 好 吃####[((0, 0), (2, 4), 'POS'), ((-1, -1), (6, 7), 'Neutral'), ((0, 0), (2, 4), 'POS')]"
        r = C.aste_row(line, "t-0")
        self.assertEqual(r["text"], "#价格也就18元，好吃")
        spans = [[(i["type"], i["span"], i["offset"]) for i in p] for p in r["info_list"]]
        self.assertEqual(spans, [[("属性词", "价格", [1, 3]), ("正向情感(情感词)", "就18元", [4, 8])],
                                 [("属性词", "#", [0, 1]), ("中性情感(情感词)", "好吃", [9, 11])]])  # duplicate dropped
        self.assertEqual(set(r["schema"]["属性词"]), {"正向情感(情感词)", "负向情感(情感词)", "中性情感(情感词)"})
        with self.assertRaises(KeyError):
            C.aste_row("好 吃####[((0, 0), (1, 1), 'GOOD')]", "t-1")

    def test_duee_paths_and_schema(self):
        import tempfile
        import convert_data as C
        with tempfile.TemporaryDirectory() as d:
            ev = {"text": "苹果公司昨日裁员200人", "id": "a", "event_list": [
                {"event_type": "组织关系-裁员", "trigger": "裁员", "trigger_start_index": 6, "class": "组织关系",
                 "arguments": [{"argument_start_index": 0, "role": "裁员方", "argument": "苹果公司", "alias": []},
                               {"argument_start_index": 8, "role": "裁员人数", "argument": "200人", "alias": []}]},
                {"event_type": "组织关系-裁员", "trigger": "裁员", "trigger_start_index": 6, "class": "组织关系",
                 "arguments": []}]}
            sch = {"event_type": "组织关系-裁员", "role_list": [{"role": "裁员方"}, {"role": "裁员人数"}], "id": "x",
                   "class": "组织关系"}
            for name, obj in (("dev.json", ev), ("schema.json", sch)):
                with open(f"{d}/{name}", "w", encoding="utf-8") as f:
                    f.write(json.dumps(obj, ensure_ascii=False) + "\n")
            (r,) = C.duee(f"{d}/dev.json", f"{d}/schema.json", "p")
        self.assertEqual(r["schema"], {"组织关系-裁员(事件触发词)": {"裁员方": None, "裁员人数": None}})
        trig = ("组织关系-裁员(事件触发词)", "裁员", [6, 8])
        self.assertEqual([[(i["type"], i["span"], i["offset"]) for i in p] for p in r["info_list"]],
                         [[trig, ("裁员方", "苹果公司", [0, 4])], [trig, ("裁员人数", "200人", [8, 12])], [trig]])


class PrepareWeightTest(unittest.TestCase):
    """prepare.py --weight adds rounds of one file after the mix's own instances, which stay identical."""

    def _run(self, raw, out, *extra):
        import subprocess
        return subprocess.run([sys.executable, f"{HERE}/prepare.py", "--mix", "v3", "--raw", raw, "--out", out,
                               "--vocab", f"{TINY}/vocab.txt", *extra], capture_output=True, text=True)

    def test_added_rounds_follow_the_mix(self):
        import gzip
        import tempfile
        import labels as L
        clu = [{"id": f"c{i}", "text": t, "schema": {k: None for k in L.CONCEPT["cluener"]},
                "info_list": [[{"type": "人名", "span": t[:2], "offset": [0, 2]}]]}
               for i, t in enumerate(["马云创办了阿里巴巴。", "王菲在北京开演唱会。", "李白写了很多诗。"])]
        wb = [{"id": f"w{i}", "text": t, "schema": {k: None for k in L.CONCEPT["weibo"]},
               "info_list": [[{"type": "地名", "span": t[:2], "offset": [0, 2]}]]}
              for i, t in enumerate(["上海今天下雨了", "广州的早茶真好吃", "成都有熊猫", "杭州西湖很美"])]
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(f"{d}/raw")
            for name, rows in (("train_cluener.jsonl", clu), ("train_weibo.jsonl", wb)):
                with open(f"{d}/raw/{name}", "w", encoding="utf-8") as f:
                    f.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
            for args in ((f"{d}/a.gz",), (f"{d}/b.gz", "--weight", "cluener=3:4")):
                r = self._run(f"{d}/raw", *args)
                self.assertEqual(r.returncode, 0, r.stderr)
            base, heavy = ([json.loads(l) for l in gzip.open(f"{d}/{x}.gz", "rt", encoding="utf-8")] for x in "ab")
            # v3: cluener 1 plain + 1 renamed round (3 instances each), then weibo 1 renamed round
            self.assertEqual([x["src"] for x in base], ["cluener"] * 6 + ["weibo"] * 4)
            self.assertEqual(heavy[:6], base[:6])            # the mix's own instances first, unchanged
            self.assertEqual(heavy[6 + 15:], base[6:])       # later files untouched (the mix's RNG too)
            added = heavy[6:6 + 15]                          # 2 more plain rounds, 3 more renamed ones
            self.assertEqual(added[:6], base[:3] * 2)        # plain = the same instances again
            self.assertTrue(all(x["src"] == "cluener" for x in added))
            self.assertTrue({json.dumps(x) for x in added[6:]} - {json.dumps(x) for x in heavy[:6]})  # new names
            for bad, msg in (("cluener=0:1", "gives it 1:1"), ("eprstmt=3:1", "no renaming family"),
                             ("sanwen_re=2:0", "skips it"), ("resume=2:2", "no train_resume.jsonl")):
                r = self._run(f"{d}/raw", f"{d}/c.gz", "--weight", bad)
                self.assertNotEqual(r.returncode, 0, bad)
                self.assertIn(msg, r.stderr, bad)


if __name__ == "__main__":
    unittest.main()
