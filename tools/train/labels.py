"""Label-name variation for training (docs/training.md, "v3 mix"): the model should learn what a
type name means, not the exact strings of one data set.

Each entity concept (person, location, organisation, ...) has a group of names used in training
(TRAIN_NAMES, the canonical name of the converted data first). HELD_OUT names one paraphrase per
CLUENER type that is never used in training: the evaluation set eval_cluener_dev_paraphrase uses
them (test_train.py checks that no training name is held out).

vary(sample, ...) rewrites one flat NER sample: every type is renamed to a random name of its
group (all mentions of a type get the same name), a random subset of the schema's types may be
dropped (with their mentions), the CLUENER organisation types may be merged into one coarse type as
the official RexUniNLU example writes them (人物 / 地理位置 / 组织机构), and negative types from
groups the data set never annotates (so they are absent from the gold) may be added.
"""
import copy

# concept -> names (the first is the name convert_data.py writes)
TRAIN_NAMES = {
    "per": ["人名", "人物", "姓名", "人", "名字", "人物名称"],
    "loc": ["地址", "地理位置", "地点", "位置", "地名", "地方"],
    "org": ["组织机构", "机构", "组织", "单位", "机构名", "机构名称"],
    "company": ["公司", "公司名", "公司名称", "商业公司"],
    "government": ["政府", "政府机构", "政府机关", "国家机关"],
    "book": ["书名", "书籍", "书", "著作"],
    "game": ["游戏", "游戏名", "网络游戏"],
    "movie": ["电影", "电影名", "影视作品"],
    "position": ["职位", "职称", "头衔", "岗位"],
    "scene": ["景点", "景区", "风景名胜"],
    "gpe": ["行政区", "行政区划"],
    "nationality": ["国籍", "国家"],
    "ethnicity": ["民族", "族群"],
    "education": ["学历", "教育程度"],
    "major": ["专业", "所学专业"],
}
# Paraphrases never used in training (evaluation only), per CLUENER type.
HELD_OUT = {"name": "人员", "address": "所在地", "organization": "团体", "company": "企业", "government": "官方机构",
            "book": "读物", "game": "电子游戏", "movie": "影片", "position": "职务", "scene": "旅游景点"}
# The official RexUniNLU example's names for CLUENER (eval_cluener_dev_official, and the coarse view).
OFFICIAL = {"name": "人物", "address": "地理位置", "organization": "组织机构", "company": "组织机构",
            "government": "组织机构"}

# Converted type name -> concept, per data set (the names convert_data.py writes).
CONCEPT = {
    "cluener": {"人名": "per", "地址": "loc", "组织机构": "org", "公司": "company", "政府": "government",
                "书名": "book", "游戏": "game", "电影": "movie", "职位": "position", "景点": "scene"},
    "resume": {"人名": "per", "地名": "loc", "组织机构": "org", "职称": "position", "国籍": "nationality",
               "民族": "ethnicity", "学历": "education", "专业": "major"},
    "weibo": {"人名": "per", "地名": "loc", "机构名": "org", "行政区": "gpe"},
    "pd": {"人物": "per", "地理位置": "loc", "组织机构": "org"},
    "st_ner": {"人物": "per", "地理位置": "loc", "组织机构": "org"},
}
# Concepts that may be added as negatives per data set: never annotated there, rarely in its texts.
NEGATIVES = {
    "cluener": ["education", "major", "ethnicity"],
    "resume": ["book", "game", "movie", "scene"],
    "weibo": ["book", "game", "movie", "education", "major"],
    "pd": ["book", "game", "movie", "education", "major"],
    "st_ner": ["book", "game", "movie", "education", "major"],
}
COARSE = {"company": "org", "government": "org"}  # the official example's view of CLUENER


def vary(sample, family, rng, p_coarse=0.3, p_subset=0.3, p_negative=0.5):
    """A renamed copy of one flat NER sample of data set `family` (a key of CONCEPT)."""
    concept_of = CONCEPT[family]
    s = copy.deepcopy(sample)
    types = list(s["schema"])
    coarse = family == "cluener" and rng.random() < p_coarse
    concept = {t: (COARSE.get(concept_of[t], concept_of[t]) if coarse else concept_of[t]) if t in concept_of else None
               for t in types}
    keep = set(types)
    if len(types) > 1 and rng.random() < p_subset:
        keep = set(rng.sample(types, rng.randint(1, len(types) - 1)))
    if coarse and rng.random() < 0.5:  # the official example's three types only
        keep = {t for t in keep if concept[t] in ("per", "loc", "org")} or keep
    name_of_concept = {}
    for c in sorted({concept[t] for t in keep if concept[t]}):
        name_of_concept[c] = rng.choice(TRAIN_NAMES[c])
    new_name = {t: name_of_concept.get(concept[t], t) for t in keep}
    unmapped = {t for t in keep if not concept[t]}
    if unmapped & set(name_of_concept.values()):  # a chosen name equals an unmapped type's: keep the originals
        new_name = {t: t for t in keep}
    schema = {new_name[t]: None for t in types if t in keep}
    info = []
    for path in s["info_list"]:
        item = path[0]
        if item["type"] in keep:
            item = dict(item, type=new_name[item["type"]])
            if [item] not in info:  # merged types can make the same mention twice
                info.append([item])
    if rng.random() < p_negative:
        for c in rng.sample(NEGATIVES[family], rng.randint(1, 2)):
            name = rng.choice(TRAIN_NAMES[c])
            if name not in schema:
                schema[name] = None
    s["schema"], s["info_list"] = schema, info
    return s
