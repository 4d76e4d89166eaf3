"""How English says numbers: cardinals, ordinals, years, money, dates, times.

num2words does the counting; this module decides which reading a token gets
and writes it in US style ("one hundred one", no "and", no commas, because a
comma inside a number would make the voice pause in the middle of it).
"""

from __future__ import annotations

from functools import lru_cache

from num2words import num2words

# Beyond this many digits nobody says the number; they read the digits.
MAX_CARDINAL_DIGITS = 15

DIGIT_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")

MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)

# code: (singular, plural, minor singular, minor plural); None: no minor unit is read.
CURRENCIES: dict[str, tuple[str, str, str | None, str | None]] = {
    "USD": ("dollar", "dollars", "cent", "cents"),
    "EUR": ("euro", "euros", "cent", "cents"),
    "GBP": ("pound", "pounds", "penny", "pence"),
    "JPY": ("yen", "yen", None, None),
    "CNY": ("yuan", "yuan", None, None),
    "INR": ("rupee", "rupees", "paisa", "paise"),
    "KRW": ("won", "won", None, None),
    "RUB": ("ruble", "rubles", "kopeck", "kopecks"),
    "CHF": ("Swiss franc", "Swiss francs", "centime", "centimes"),
    "CAD": ("Canadian dollar", "Canadian dollars", "cent", "cents"),
    "AUD": ("Australian dollar", "Australian dollars", "cent", "cents"),
    "BTC": ("bitcoin", "bitcoin", None, None),
}

CURRENCY_SYMBOLS = {
    "US$": "USD",
    "A$": "AUD",
    "C$": "CAD",
    "$": "USD",
    "€": "EUR",
    "£": "GBP",
    "¥": "JPY",
    "₹": "INR",
    "₩": "KRW",
    "₽": "RUB",
    "₿": "BTC",
}

SCALES = {
    "thousand": "thousand",
    "k": "thousand",
    "million": "million",
    "m": "million",
    "mn": "million",
    "billion": "billion",
    "b": "billion",
    "bn": "billion",
    "trillion": "trillion",
    "t": "trillion",
    "tn": "trillion",
}

_FRACTION_NAMES = {2: ("half", "halves"), 4: ("quarter", "quarters")}


def _us_style(words: str) -> str:
    return words.replace(",", "").replace(" and ", " ").replace("-and-", "-")


def digits(text: str) -> str:
    """Each digit on its own: "007" -> "zero zero seven"."""
    return " ".join(DIGIT_WORDS[int(ch)] for ch in text if ch.isdecimal())


@lru_cache(maxsize=4096)  # num2words is slow; texts repeat their numbers
def cardinal(value: int) -> str:
    if value < 0:
        return "minus " + cardinal(-value)
    if len(str(value)) > MAX_CARDINAL_DIGITS:
        return digits(str(value))
    return _us_style(num2words(value))


@lru_cache(maxsize=4096)
def ordinal(value: int) -> str:
    if len(str(value)) > MAX_CARDINAL_DIGITS:
        return digits(str(value))
    return _us_style(num2words(value, to="ordinal"))


@lru_cache(maxsize=4096)
def year(value: int) -> str:
    """1999 -> "nineteen ninety-nine", 2005 -> "two thousand five"."""
    return _us_style(num2words(value, to="year"))


def plural_of(words: str) -> str:
    """Plural of a number's words: nineteen ninety -> nineteen nineties (the 1990s)."""
    if words.endswith("y"):
        return words[:-1] + "ies"
    if words.endswith("x"):
        return words + "es"
    return words + "s"


def number(integer: str, fraction: str | None = None, *, negative: bool = False) -> str:
    """A written number with optional decimals: ("1,234", "5") -> "one thousand ... point five"."""
    integer = integer.replace(",", "")
    too_long = len(integer) > MAX_CARDINAL_DIGITS  # and int() of it could be slow or refused
    if too_long or (len(integer) > 1 and integer.startswith("0") and not fraction):
        spoken = digits(integer)
    else:
        spoken = cardinal(int(integer or "0"))
    if fraction:
        spoken += " point " + digits(fraction)
    return ("minus " + spoken) if negative else spoken


def is_one(integer: str, fraction: str | None) -> bool:
    return integer.replace(",", "").lstrip("0") == "1" and not fraction


def money(integer: str, fraction: str | None, code: str, *, scale: str | None = None, negative: bool = False) -> str:
    """$3.50 -> "three dollars and fifty cents"; $3.5m -> "three point five million dollars"."""
    major, majors, minor, minors = CURRENCIES[code]
    sign = "minus " if negative else ""
    if scale:
        return f"{sign}{number(integer, fraction)} {SCALES[scale.lower()]} {majors}"
    too_long = len(integer.replace(",", "")) > MAX_CARDINAL_DIGITS
    if fraction is None or minor is None or minors is None or len(fraction) > 2 or too_long:
        unit = major if is_one(integer, fraction) else majors
        return f"{sign}{number(integer, fraction)} {unit}"
    whole = int(integer.replace(",", "") or "0")
    cents = int(fraction.ljust(2, "0"))
    parts = []
    if whole or not cents:
        parts.append(f"{cardinal(whole)} {major if whole == 1 else majors}")
    if cents:
        parts.append(f"{cardinal(cents)} {minor if cents == 1 else minors}")
    return sign + " and ".join(parts)


def fraction(numerator: int, denominator: int) -> str | None:
    """3/4 -> "three quarters"; None when a fraction reading would be odd."""
    if not 2 <= denominator <= 12 or not 0 < numerator < 100:
        return None
    singular, plural = _FRACTION_NAMES.get(denominator, (None, None))
    if singular is None or plural is None:
        singular = ordinal(denominator)
        plural = singular + "s"
    return f"{cardinal(numerator)} {singular if numerator == 1 else plural}"


def short_year(value: str) -> str:
    """Years written with fewer than four digits: the '05 of 1/2/05 is "oh five"."""
    if len(value) == 2 and value.startswith("0"):
        return "oh " + DIGIT_WORDS[int(value[1])]
    return cardinal(int(value))


def date(month: int, day: int | None, year_text: str | None) -> str | None:
    """US reading: "January second, twenty twenty-four"; None if not a date."""
    if not 1 <= month <= 12 or (day is not None and not 1 <= day <= 31):
        return None
    spoken = MONTHS[month - 1]
    if day is not None:
        spoken += " " + ordinal(day)
    if year_text:
        said = year(int(year_text)) if len(year_text) == 4 else short_year(year_text)
        spoken += (", " if day is not None else " ") + said
    return spoken


def day_first_date(day: int, month: int, year_text: str | None) -> str | None:
    """Day-first reading: 2 January 2024 -> "the second of January, twenty twenty-four"."""
    if not 1 <= month <= 12 or not 1 <= day <= 31:
        return None
    spoken = f"the {ordinal(day)} of {MONTHS[month - 1]}"
    if year_text:
        spoken += ", " + year(int(year_text))
    return spoken


def month_number(name: str) -> int:
    """Month number from a name or abbreviation: Sept, September, sep -> 9."""
    prefix = name[:3].lower()
    for index, month in enumerate(MONTHS):
        if month[:3].lower() == prefix:
            return index + 1
    raise ValueError(name)


def meridiem(text: str) -> str:
    """Spoken a.m./PM: "a-m" / "p-m"; the hyphen makes espeak-ng say the
    letter names; "a m" would come out as the article "a"."""
    return "a-m" if text.lower().startswith("a") else "p-m"


def clock_time(hour: int, minute: int, second: int | None, suffix: str | None) -> str | None:
    """10:30am -> "ten thirty a-m"; 10:05 -> "ten oh five"; None if not a time."""
    if hour > 24 or minute > 59 or (second is not None and second > 59):
        return None
    if minute == 0 and second is None:
        spoken = cardinal(hour) + ("" if suffix else " o'clock")
    elif minute < 10:
        spoken = f"{cardinal(hour)} oh {cardinal(minute)}"
    else:
        spoken = f"{cardinal(hour)} {cardinal(minute)}"
    if second is not None:
        spoken += f" and {cardinal(second)} second{'' if second == 1 else 's'}"
    if suffix:
        spoken += " " + meridiem(suffix)
    return spoken


def telephone(text: str) -> str:
    """Digit groups read digit by digit, a pause between groups."""
    groups: list[str] = []
    current = ""
    for ch in text:
        if ch.isdecimal():
            current += ch
        elif current:
            groups.append(current)
            current = ""
    if current:
        groups.append(current)
    spoken = ", ".join(digits(group) for group in groups)
    return ("plus " + spoken) if text.lstrip().startswith("+") else spoken


_ROMAN_VALUES = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}


def roman(text: str) -> int | None:
    """Value of a Roman numeral (XIV -> 14); None for malformed numerals."""
    total = 0
    previous = 0
    for ch in reversed(text.upper()):
        value = _ROMAN_VALUES.get(ch)
        if value is None:
            return None
        if value < previous:
            total -= value
        else:
            total += value
            previous = value
    # Round-trip check rejects malformed strings such as "IIII" or "VX".
    return total if total and _to_roman(total) == text.upper() else None


def _to_roman(value: int) -> str:
    table = [
        (1000, "M"),
        (900, "CM"),
        (500, "D"),
        (400, "CD"),
        (100, "C"),
        (90, "XC"),
        (50, "L"),
        (40, "XL"),
        (10, "X"),
        (9, "IX"),
        (5, "V"),
        (4, "IV"),
        (1, "I"),
    ]
    out = []
    for amount, letters in table:
        while value >= amount:
            out.append(letters)
            value -= amount
    return "".join(out)
