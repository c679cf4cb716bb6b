"""Credentials written the Chinese way (issue 40, item 4): 密码是/为/：, 口令, 秘钥/密钥, 令牌, 账号密码, with or
without a space, are caught like their English forms; notes about passwords, questions and advice pass.

Values are assembled at run time from seeded random characters, so this file holds nothing a scanner
would flag."""
from __future__ import annotations

import random
import string

import pytest

from memstrata import Memory
from memstrata.errors import SecretDetected
from memstrata.storage.secrets import scan

_rng = random.Random(4040)


def rnd(n: int = 14) -> str:
    """A password-like value: letters of both cases and digits, and a symbol."""
    chars = [_rng.choice(string.ascii_lowercase), _rng.choice(string.ascii_uppercase), _rng.choice(string.digits)]
    chars += [_rng.choice(string.ascii_letters + string.digits) for _ in range(n - 4)] + [_rng.choice("#@!%")]
    _rng.shuffle(chars)
    return "".join(chars)


CAUGHT = [
    "Redis 的密码是 {v}",
    "Redis的密码是{v}",
    "堡垒机登录口令 {v}",
    "堡垒机登录口令{v}，每季度更换",
    "测试环境数据库密码为 {v}",
    "测试环境数据库密码为{v}。",
    "账号密码 admin/{v}",
    "密码：{v}",
    "密码是：“{v}”",
    "阿里云 AccessKey 秘钥是 {v}",
    "OSS 密钥为 {v}",
    "访问令牌 {v}",
    "VPN 口令为 {v}，别外传",
    "服务器私钥是 {v}",                # an attacker's list: 私钥, English words before 是/为, traditional characters
    "GitHub token 为 {v}",
    "测试环境 password 是 {v}",
    "數據庫密碼是 {v}",
    "金鑰為 {v}",
]

QUIET = [
    "密码是一种用来验证身份的字符串：越长越好，并且不要在多个网站重复使用同一个密码。",
    "密码是什么？",
    "设置密码为强密码，至少十二位，包含大小写字母和数字。",
    "密码为空时，系统会提示用户先设置密码。",
    "密码是 123456 这种弱密码千万不要用。",
    "令牌桶算法（token bucket）用来限流，令牌按固定速率放入桶中。",
    "密钥 RSA-2048 是常见的长度，密钥长度为 256 位的 AES 也很常用。",
    "密码学是研究加密和解密的学科。",
    "我们的签名密钥是 RSA2048 格式，存放在 KMS 里。",  # what kind of key (an attacker's false alarm)
    "数据加密密钥为 AES256，私钥是 ED25519 的。",
    "token 为空时返回 401。",
    "请把密码改为 <your-password>，口令 ****** 只是占位。",
    "密码 manager 推荐 Bitwarden。",
    "用户密码是否正确由服务端判断，令牌 bucket 满了就拒绝请求。",
    "忘记密码时，点击登录页的“找回密码”。",
    "- 第 12 期：[告别密码](docs/issue-12.md)",  # a link right after the word (read as `](docs/...`)
    "sudo 需要输入根用户的密码，macOS 支持用指纹替代。",  # NFKC makes `，` a `,`: no value starts there
    "报名时输入优惠口令 **SPRING100** 可再减 100 元；使用口令： **SPRINGSALE** 也行。",  # a coupon's code word
]


@pytest.mark.parametrize("template", CAUGHT)
def test_chinese_credential_phrasings_are_caught(template):
    text = template.format(v=rnd())
    found = scan(text)
    assert found, text
    assert scan(f"password is {rnd()}")  # as the English form is


@pytest.mark.parametrize("text", QUIET)
def test_notes_about_passwords_are_no_credential(text):
    assert scan(text) == [], text


def test_a_write_of_a_chinese_credential_is_refused(tmp_path, embedder):
    m = Memory(tmp_path / "mem", embedder=embedder)
    m.init()
    with pytest.raises(SecretDetected):
        m.write(f"Redis 的密码是 {rnd()}", title="Redis", category="ops")
    m.write(QUIET[0], title="什么是好密码", category="ops")
    assert [e.title for e in m.list()] == ["什么是好密码"]
