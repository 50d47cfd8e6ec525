"""The papers behind every partition method, for the dataset card's citation block and tags.

:data:`PAPERS` holds one BibTeX entry per paper; :data:`METHODS` maps a recipe ``method`` (the
partitioner's ``name``, or the builder's for device builds) to the heterogeneity it makes (a Hub
tag) and the papers it comes from. A method missing from :data:`METHODS` cites hetbench alone. To
add a method, add one line to :data:`METHODS` (and its paper to :data:`PAPERS` if new).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hetbench.version import __version__

#: BibTeX of every paper a method cites (key -> entry); authors, titles and venues as published
PAPERS: dict[str, str] = {
    "mcmahan2017communication": """@inproceedings{mcmahan2017communication,
  title     = {Communication-Efficient Learning of Deep Networks from Decentralized Data},
  author    = {McMahan, Brendan and Moore, Eider and Ramage, Daniel and Hampson, Seth and Ag{\\"u}era y Arcas, Blaise},
  booktitle = {Proceedings of the 20th International Conference on Artificial Intelligence and Statistics (AISTATS)},
  series    = {Proceedings of Machine Learning Research},
  volume    = {54},
  pages     = {1273--1282},
  publisher = {PMLR},
  year      = {2017}
}""",
    "hsu2019measuring": """@article{hsu2019measuring,
  title   = {Measuring the Effects of Non-Identical Data Distribution for Federated Visual Classification},
  author  = {Hsu, Tzu-Ming Harry and Qi, Hang and Brown, Matthew},
  journal = {arXiv preprint arXiv:1909.06335},
  year    = {2019}
}""",
    "hsu2020federated": """@inproceedings{hsu2020federated,
  title     = {Federated Visual Classification with Real-World Data Distribution},
  author    = {Hsu, Tzu-Ming Harry and Qi, Hang and Brown, Matthew},
  booktitle = {European Conference on Computer Vision (ECCV)},
  publisher = {Springer},
  year      = {2020}
}""",
    "li2022federated": """@inproceedings{li2022federated,
  title     = {Federated Learning on Non-{IID} Data Silos: An Experimental Study},
  author    = {Li, Qinbin and Diao, Yiqun and Chen, Quan and He, Bingsheng},
  booktitle = {2022 IEEE 38th International Conference on Data Engineering (ICDE)},
  pages     = {965--978},
  publisher = {IEEE},
  year      = {2022}
}""",
    "yuan2022what": """@inproceedings{yuan2022what,
  title     = {What Do We Mean by Generalization in Federated Learning?},
  author    = {Yuan, Honglin and Morningstar, Warren and Ning, Lin and Singhal, Karan},
  booktitle = {International Conference on Learning Representations (ICLR)},
  year      = {2022}
}""",
    "kim2024heteroswitch": """@inproceedings{kim2024heteroswitch,
  title     = {{HeteroSwitch}: Characterizing and Taming System-Induced Data Heterogeneity in Federated Learning},
  author    = {Kim, Gyudong and Ghasemi, Mehdi and Heidari, Soroush and Kim, Seungryong and Kim, Young Geun and Vrudhula, Sarma and Wu, Carole-Jean},
  booktitle = {Proceedings of Machine Learning and Systems (MLSys)},
  volume    = {6},
  year      = {2024}
}""",
    "jia2024dapperfl": """@inproceedings{jia2024dapperfl,
  title     = {{DapperFL}: Domain Adaptive Federated Learning with Model Fusion Pruning for Edge Devices},
  author    = {Jia, Yongzhe and Zhang, Xuyun and Hu, Hongsheng and Choo, Kim-Kwang Raymond and Qi, Lianyong and Xu, Xiaolong and Beheshti, Amin and Dou, Wanchun},
  booktitle = {Advances in Neural Information Processing Systems (NeurIPS)},
  volume    = {37},
  year      = {2024}
}""",
    "karimireddy2020scaffold": """@inproceedings{karimireddy2020scaffold,
  title     = {{SCAFFOLD}: Stochastic Controlled Averaging for Federated Learning},
  author    = {Karimireddy, Sai Praneeth and Kale, Satyen and Mohri, Mehryar and Reddi, Sashank and Stich, Sebastian and Suresh, Ananda Theertha},
  booktitle = {Proceedings of the 37th International Conference on Machine Learning (ICML)},
  series    = {Proceedings of Machine Learning Research},
  volume    = {119},
  pages     = {5132--5143},
  year      = {2020}
}""",
    "borazjani2025redefining": """@misc{borazjani2025redefining,
  title  = {Redefining non-{IID} Data in Federated Learning for Computer Vision Tasks: Migrating from Labels to Embeddings for Task-Specific Data Distributions},
  author = {Borazjani, Kasra and Abdisarabshali, Payam and Khosravan, Naji and Hosseinalipour, Seyyedali},
  note   = {arXiv preprint},
  year   = {2025}
}""",
}


def hetbench_bibtex() -> str:
    """The BibTeX of hetbench itself (this version), cited by every card."""
    return f"""@software{{hetbench,
  title   = {{hetbench: federated-learning splits with measured heterogeneity}},
  author  = {{{{hetbench developers}}}},
  version = {{{__version__}}},
  year    = {{2026}}
}}"""


@dataclass(frozen=True)
class MethodInfo:
    """What a partition method makes (``kind``: a Hub tag, ``None`` for none) and the keys of
    :data:`PAPERS` it comes from, method paper first."""

    kind: str | None
    papers: tuple[str, ...]


_DEVICES = MethodInfo("system-induced-heterogeneity", ("kim2024heteroswitch",))
_NIID_BENCH = ("li2022federated",)

#: recipe ``method`` -> :class:`MethodInfo`
METHODS: dict[str, MethodInfo] = {
    "iid": MethodInfo("iid", ("mcmahan2017communication",)),
    "shards": MethodInfo("label-skew", ("mcmahan2017communication",)),
    "classes-per-client": MethodInfo("label-skew", ("li2022federated", "mcmahan2017communication")),
    "dirichlet": MethodInfo("label-skew", ("hsu2019measuring", "li2022federated")),
    "natural-id": MethodInfo("natural-partition", ()),
    "geo-s2": MethodInfo("geographic-skew", ("hsu2020federated",)),
    "users": MethodInfo("natural-partition", ("hsu2020federated",)),
    "embedding": MethodInfo("embedding-skew", ("borazjani2025redefining", "hsu2019measuring")),
    "semantic": MethodInfo("feature-skew", ("yuan2022what",)),
    "domains": MethodInfo("domain-shift", ("jia2024dapperfl",)),
    "device": _DEVICES,
    "iso-isp": _DEVICES,
    "devices": _DEVICES,
    "synthetic-color": _DEVICES,
    "real-devices": _DEVICES,
    "quantity": MethodInfo("quantity-skew", _NIID_BENCH),
    "feature-noise": MethodInfo("feature-skew", _NIID_BENCH),
    "label-noise": MethodInfo("label-noise", _NIID_BENCH),
}


def method_info(method: str) -> MethodInfo:
    """The :class:`MethodInfo` of a recipe method; an unknown method has no kind and no paper."""
    return METHODS.get(method, MethodInfo(None, ()))


def citations(method: str) -> list[str]:
    """BibTeX entries a split made by ``method`` should cite: its papers, then hetbench.

    Examples
    --------
    >>> from hetbench.publish.citations import bibtex_keys, citations
    >>> [bibtex_keys(e)[0] for e in citations("dirichlet")]
    ['hsu2019measuring', 'li2022federated', 'hetbench']
    >>> [bibtex_keys(e)[0] for e in citations("a-method-nobody-registered")]
    ['hetbench']
    """
    return [PAPERS[k] for k in method_info(method).papers] + [hetbench_bibtex()]


_ENTRY = re.compile(r"@([A-Za-z]+)\s*\{\s*([^\s,{}]+)\s*,")


def bibtex_keys(text: str) -> list[str]:
    """Keys of the ``@type{key,`` entries in BibTeX ``text``, in order.

    Examples
    --------
    >>> from hetbench.publish.citations import PAPERS, bibtex_keys
    >>> bibtex_keys(PAPERS["kim2024heteroswitch"])
    ['kim2024heteroswitch']
    """
    return [m.group(2) for m in _ENTRY.finditer(text)]


__all__ = ["PAPERS", "METHODS", "MethodInfo", "method_info", "citations", "hetbench_bibtex", "bibtex_keys"]
