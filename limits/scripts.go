package limits

import "github.com/redis/go-redis/v9"

// The Lua scripts run atomically in Redis, with Redis's own clock (TIME), so every replica
// sees one order of events and one time. Keys (all under the configured prefix):
//
//	rl:k:<key>, rl:m:<model>, rl:t:<team>  hash {r: requests, t: tokens, id}, expiring when the minute window ends
//	bu:k:<key>, bu:t:<team>                hash {t: tokens, u: micro-USD, id}, expiring when the budget period ends
//	cc:k:<key>, cc:m:<model>, cc:t:<team>  sorted set of held concurrency slots, scored by lease end (ms)
//
// Tokens and micro-USD include the reservations of the requests in flight (Request.Reserve).
// A window's id (the time it was first reserved in, ms) tells finishScript whether the
// window a reservation went to is still the current one.

// admitScript checks every limit and, when all pass, counts the request and takes the
// slots. KEYS: key window, key budget, key slots, model window, model slots, team
// window, team budget, team slots.
// ARGV: key rpm, key tpm, key concurrent, budget tokens, budget micro-USD, model rpm,
// model tpm, model concurrent, slot id, lease ms, window ms, reserved tokens, reserved
// micro-USD, budget period ms, team rpm, team tpm, team concurrent, team budget tokens,
// team budget micro-USD, team budget period ms.
// Returns {denied, retry ms, key requests, key tokens, window ms left, budget tokens,
// budget micro-USD, held, key window id, model window id, budget id, team window id,
// team budget id} (ids 0: nothing reserved there).
var admitScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local krpm, ktpm, kconc = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local btok, busd = tonumber(ARGV[4]), tonumber(ARGV[5])
local mrpm, mtpm, mconc = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local slot, lease, win = ARGV[9], tonumber(ARGV[10]), tonumber(ARGV[11])
local rtok, rusd, period = tonumber(ARGV[12]), tonumber(ARGV[13]), tonumber(ARGV[14])
local trpm, ttpm, tconc = tonumber(ARGV[15]), tonumber(ARGV[16]), tonumber(ARGV[17])
local tbtok, tbusd, tperiod = tonumber(ARGV[18]), tonumber(ARGV[19]), tonumber(ARGV[20])

local function window(k)
  local v = redis.call('HMGET', k, 'r', 't')
  local ttl = redis.call('PTTL', k)
  return tonumber(v[1]) or 0, tonumber(v[2]) or 0, ttl
end
local function slots(k, limit)
  if limit <= 0 then return 0 end
  redis.call('ZREMRANGEBYSCORE', k, '-inf', now)
  return redis.call('ZCARD', k)
end

local kr, kt, kttl = window(KEYS[1])
local kheld = slots(KEYS[3], kconc)
local bt, bu, bttl = 0, 0, -2
if btok > 0 or busd > 0 then
  local v = redis.call('HMGET', KEYS[2], 't', 'u')
  bt, bu, bttl = tonumber(v[1]) or 0, tonumber(v[2]) or 0, redis.call('PTTL', KEYS[2])
end
local mr, mt, mttl, mheld = 0, 0, -2, 0
if mrpm > 0 or mtpm > 0 or mconc > 0 then
  mr, mt, mttl = window(KEYS[4])
  mheld = slots(KEYS[5], mconc)
end
local tr, tt, tttl, theld = 0, 0, -2, 0
if trpm > 0 or ttpm > 0 or tconc > 0 then
  tr, tt, tttl = window(KEYS[6])
  theld = slots(KEYS[8], tconc)
end
local tbt, tbu, tbttl = 0, 0, -2
if tbtok > 0 or tbusd > 0 then
  local v = redis.call('HMGET', KEYS[7], 't', 'u')
  tbt, tbu, tbttl = tonumber(v[1]) or 0, tonumber(v[2]) or 0, redis.call('PTTL', KEYS[7])
end
local function left(ttl, full)
  if ttl < 0 then return full end
  return ttl
end

local denied, retry = 0, 0
if krpm > 0 and kr >= krpm then denied, retry = 1, left(kttl, win)
elseif ktpm > 0 and kt >= ktpm then denied, retry = 2, left(kttl, win)
elseif kconc > 0 and kheld >= kconc then denied, retry = 3, 1000
elseif btok > 0 and bt >= btok then denied, retry = 4, left(bttl, 0)
elseif busd > 0 and bu >= busd then denied, retry = 5, left(bttl, 0)
elseif trpm > 0 and tr >= trpm then denied, retry = 9, left(tttl, win)
elseif ttpm > 0 and tt >= ttpm then denied, retry = 10, left(tttl, win)
elseif tconc > 0 and theld >= tconc then denied, retry = 11, 1000
elseif tbtok > 0 and tbt >= tbtok then denied, retry = 12, left(tbttl, 0)
elseif tbusd > 0 and tbu >= tbusd then denied, retry = 13, left(tbttl, 0)
elseif mrpm > 0 and mr >= mrpm then denied, retry = 6, left(mttl, win)
elseif mtpm > 0 and mt >= mtpm then denied, retry = 7, left(mttl, win)
elseif mconc > 0 and mheld >= mconc then denied, retry = 8, 1000
end

local held = 0
if denied == 0 then
  if krpm > 0 or ktpm > 0 then
    kr = redis.call('HINCRBY', KEYS[1], 'r', 1)
    if kttl < 0 then redis.call('PEXPIRE', KEYS[1], win); kttl = win end
  end
  if mrpm > 0 or mtpm > 0 then
    redis.call('HINCRBY', KEYS[4], 'r', 1)
    if mttl < 0 then redis.call('PEXPIRE', KEYS[4], win) end
  end
  if kconc > 0 then
    redis.call('ZADD', KEYS[3], now + lease, slot)
    redis.call('PEXPIRE', KEYS[3], lease)
    held = 1
  end
  if mconc > 0 then
    redis.call('ZADD', KEYS[5], now + lease, slot)
    redis.call('PEXPIRE', KEYS[5], lease)
    held = 1
  end
  if trpm > 0 or ttpm > 0 then
    redis.call('HINCRBY', KEYS[6], 'r', 1)
    if tttl < 0 then redis.call('PEXPIRE', KEYS[6], win) end
  end
  if tconc > 0 then
    redis.call('ZADD', KEYS[8], now + lease, slot)
    redis.call('PEXPIRE', KEYS[8], lease)
    held = 1
  end
end

-- The reservation: charged at once, settled by finishScript.
local function reserve(k, field, n, ttl)
  redis.call('HINCRBY', k, field, n)
  if redis.call('PTTL', k) < 0 then redis.call('PEXPIRE', k, ttl) end
  redis.call('HSETNX', k, 'id', now)
  return tonumber(redis.call('HGET', k, 'id'))
end
local kid, mid, bid, tid, tbid = 0, 0, 0, 0, 0
if denied == 0 then
  if rtok > 0 and ktpm > 0 then
    kid = reserve(KEYS[1], 't', rtok, win)
    kt = kt + rtok
    if kttl < 0 then kttl = win end
  end
  if rtok > 0 and mtpm > 0 then mid = reserve(KEYS[4], 't', rtok, win) end
  if (btok > 0 or busd > 0) and (rtok > 0 or rusd > 0) then
    bid = reserve(KEYS[2], 't', math.max(rtok, 0), period)
    if rusd > 0 then redis.call('HINCRBY', KEYS[2], 'u', rusd) end
    bt, bu = bt + math.max(rtok, 0), bu + math.max(rusd, 0)
  end
  if rtok > 0 and ttpm > 0 then tid = reserve(KEYS[6], 't', rtok, win) end
  if (tbtok > 0 or tbusd > 0) and (rtok > 0 or rusd > 0) then
    tbid = reserve(KEYS[7], 't', math.max(rtok, 0), tperiod)
    if rusd > 0 then redis.call('HINCRBY', KEYS[7], 'u', rusd) end
  end
end
return {denied, retry, kr, kt, left(kttl, win), bt, bu, held, kid, mid, bid, tid, tbid}
`)

// finishScript charges a finished request in place of its reservation and releases its
// slots. KEYS as admitScript.
// ARGV: tokens, micro-USD, slot id ("" when none), key tpm charged (0/1), budget charged
// (0/1), model tpm charged (0/1), budget period ms, window ms, reserved tokens, reserved
// micro-USD, key window id, model window id, budget id (as admitScript returned them),
// team tpm charged (0/1), team budget charged (0/1), team budget period ms, team window
// id, team budget id.
// Returns {budget tokens, budget micro-USD, team budget tokens, team budget micro-USD}.
var finishScript = redis.NewScript(`
local tokens, usd, slot = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
local period, win = tonumber(ARGV[7]), tonumber(ARGV[8])
local rtok, rusd = tonumber(ARGV[9]), tonumber(ARGV[10])
-- charge adds n, less the reservation r when the window that holds it (id; 0: none) is
-- still k's current one; a window begun since gets n whole.
local function charge(k, field, n, r, id, ttl)
  if id ~= 0 and tonumber(redis.call('HGET', k, 'id')) == id then n = n - r end
  if n == 0 then return end
  local v = redis.call('HINCRBY', k, field, n)
  if v < 0 then redis.call('HSET', k, field, 0) end
  if redis.call('PTTL', k) < 0 then redis.call('PEXPIRE', k, ttl) end
end
local kid, mid, bid = tonumber(ARGV[11]), tonumber(ARGV[12]), tonumber(ARGV[13])
if ARGV[4] == '1' then charge(KEYS[1], 't', tokens, rtok, kid, win) end
if ARGV[6] == '1' then charge(KEYS[4], 't', tokens, rtok, mid, win) end
local bt, bu = 0, 0
if ARGV[5] == '1' then
  charge(KEYS[2], 't', tokens, rtok, bid, period)
  charge(KEYS[2], 'u', usd, rusd, bid, period)
  local v = redis.call('HMGET', KEYS[2], 't', 'u')
  bt, bu = tonumber(v[1]) or 0, tonumber(v[2]) or 0
end
local tid, tbid, tperiod = tonumber(ARGV[17]), tonumber(ARGV[18]), tonumber(ARGV[16])
if ARGV[14] == '1' then charge(KEYS[6], 't', tokens, rtok, tid, win) end
local tbt, tbu = 0, 0
if ARGV[15] == '1' then
  charge(KEYS[7], 't', tokens, rtok, tbid, tperiod)
  charge(KEYS[7], 'u', usd, rusd, tbid, tperiod)
  local v = redis.call('HMGET', KEYS[7], 't', 'u')
  tbt, tbu = tonumber(v[1]) or 0, tonumber(v[2]) or 0
end
if slot ~= '' then
  redis.call('ZREM', KEYS[3], slot)
  redis.call('ZREM', KEYS[5], slot)
  redis.call('ZREM', KEYS[8], slot)
end
return {bt, bu, tbt, tbu}
`)

// renewScript extends the leases of held slots that still exist. KEYS: slot sets;
// ARGV[1]: lease ms, ARGV[2..]: the slot id held in each KEYS entry.
var renewScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = tonumber(ARGV[1])
for i, k in ipairs(KEYS) do
  redis.call('ZADD', k, 'XX', now + lease, ARGV[i + 1])
  redis.call('PEXPIRE', k, lease)
end
return #KEYS
`)
