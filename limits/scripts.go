package limits

import "github.com/redis/go-redis/v9"

// The Lua scripts run atomically in Redis, with Redis's own clock (TIME), so every replica
// sees one order of events and one time. Keys (all under the configured prefix):
//
//	rl:k:<key>, rl:m:<model>  hash {r: requests, t: tokens}, expiring when the minute window ends
//	bu:k:<key>                hash {t: tokens, u: micro-USD}, expiring when the budget period ends
//	cc:k:<key>, cc:m:<model>  sorted set of held concurrency slots, scored by lease end (ms)

// admitScript checks every limit and, when all pass, counts the request and takes the
// slots. KEYS: key window, key budget, key slots, model window, model slots.
// ARGV: key rpm, key tpm, key concurrent, budget tokens, budget micro-USD, model rpm,
// model tpm, model concurrent, slot id, lease ms, window ms.
// Returns {denied, retry ms, key requests, key tokens, window ms left, budget tokens,
// budget micro-USD, held}.
var admitScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local krpm, ktpm, kconc = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local btok, busd = tonumber(ARGV[4]), tonumber(ARGV[5])
local mrpm, mtpm, mconc = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local slot, lease, win = ARGV[9], tonumber(ARGV[10]), tonumber(ARGV[11])

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
end
return {denied, retry, kr, kt, left(kttl, win), bt, bu, held}
`)

// finishScript charges a finished request and releases its slots. KEYS as admitScript.
// ARGV: tokens, micro-USD, slot id ("" when none), key tpm charged (0/1), budget charged
// (0/1), model tpm charged (0/1), budget period ms, window ms.
// Returns {budget tokens, budget micro-USD}.
var finishScript = redis.NewScript(`
local tokens, usd, slot = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
local period, win = tonumber(ARGV[7]), tonumber(ARGV[8])
local function charge(k, field, n, ttl)
  redis.call('HINCRBY', k, field, n)
  if redis.call('PTTL', k) < 0 then redis.call('PEXPIRE', k, ttl) end
end
if tokens > 0 and ARGV[4] == '1' then charge(KEYS[1], 't', tokens, win) end
if tokens > 0 and ARGV[6] == '1' then charge(KEYS[4], 't', tokens, win) end
local bt, bu = 0, 0
if ARGV[5] == '1' then
  if tokens > 0 then charge(KEYS[2], 't', tokens, period) end
  if usd > 0 then charge(KEYS[2], 'u', usd, period) end
  local v = redis.call('HMGET', KEYS[2], 't', 'u')
  bt, bu = tonumber(v[1]) or 0, tonumber(v[2]) or 0
end
if slot ~= '' then
  redis.call('ZREM', KEYS[3], slot)
  redis.call('ZREM', KEYS[5], slot)
end
return {bt, bu}
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
