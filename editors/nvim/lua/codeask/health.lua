-- :checkhealth codeask: server found, its version, the index state and the LLM.
local M = {}

local function version_command(cmd)
  -- { 'codeask', 'serve', ... } -> { 'codeask', '--version' }; { python, '-m', 'codeask', 'serve' } -> ...
  local out = {}
  for _, part in ipairs(cmd) do
    if part == 'serve' then break end
    table.insert(out, part)
  end
  table.insert(out, '--version')
  return out
end

--- The first loaded buffer the server starts for (a filetype of `config`, under one of its root markers),
--- or nil: while Neovim starts the server, no client is listed yet.
local function starting_for(config)
  if not config then return nil end
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(b) and vim.tbl_contains(config.filetypes, vim.bo[b].filetype)
        and vim.fs.root(b, config.root_markers) then
      return vim.api.nvim_buf_get_name(b)
    end
  end
  return nil
end

function M.check()
  local codeask = require('codeask')
  vim.health.start('codeask')
  if vim.fn.has('nvim-0.11') == 0 then
    vim.health.error('Neovim 0.11 or newer is needed (vim.lsp.config / vim.lsp.enable)')
    return
  end
  if not codeask.config then
    vim.health.warn("setup() was not called", { "add require('codeask').setup({}) to your config" })
  end
  local cmd = (codeask.config or codeask.defaults).cmd
  local exe = cmd[1]
  if vim.fn.executable(exe) == 0 then
    vim.health.error(('server not found: `%s` is not an executable'):format(exe), {
      'install codeask: ' .. codeask.UPGRADE_COMMAND:gsub('%-%-upgrade ', '') .. ' (puts `codeask` on PATH)',
      "or point the plugin at it: require('codeask').setup({ cmd = { '/path/to/venv/bin/codeask', 'serve' } })",
    })
    return
  end
  vim.health.ok(('server found: %s'):format(vim.fn.exepath(exe)))

  local res = vim.system(version_command(cmd), { text = true }):wait(60000)
  local version = res.code == 0 and (res.stdout or ''):match('codeask%s+([%w%.%-]+)') or nil
  local problem = codeask.version_problem(version)
  if problem then
    vim.health.error(problem:gsub('^codeask: ', ''), { codeask.UPGRADE_COMMAND })
  else
    vim.health.ok(('server version %s (>= %s needed)'):format(version, codeask.MIN_SERVER_VERSION))
  end

  local client = codeask.client()
  local starting = not client and starting_for(codeask.config)
  if starting then -- Neovim lists the client once `initialize` is answered (seconds after :edit)
    vim.wait(codeask.START_WAIT_MS, function() return codeask.client() ~= nil end, 100)
    client = codeask.client()
    if not client then
      vim.health.error(('the server did not start in %d s for %s'):format(codeask.START_WAIT_MS / 1000, starting),
        { 'see :LspLog' })
      return
    end
  end
  if not client then
    vim.health.info('the server is not running in this session: open a file under a project root to start it')
    return
  end
  -- 30 s: the server's first codeask.status waits up to 20 s for its counts (lsp/status.py FIRST_STATUS_WAIT)
  local r = client:request_sync('workspace/executeCommand', { command = 'codeask.status', arguments = {} }, 30000)
  local s = r and r.result
  if not s then
    vim.health.warn('the server did not answer codeask.status' .. (r and r.err and (': ' .. r.err.message) or ''))
    return
  end
  local state = s.indexing and 'indexing' or s.state or 'ready' -- keyword-only, read-only, ... as the CLI says
  if s.index_state == 'not-indexed' then
    vim.health.ok('index: not indexed yet (the first question starts indexing)')
  elseif s.stale and s.files == nil then
    vim.health.ok(('index %s: counts not known yet (the index is busy); :checkhealth codeask again shortly'):format(state))
  else
    vim.health.ok(('index %s: %d files, %d chunks, %d waiting for embeddings (%s)'):format(
      state, s.files or 0, s.chunks_total or 0, s.vectors_pending or 0, s.index_dir or 'no index yet'))
  end
  if s.llm then
    vim.health.ok('LLM: ' .. s.llm)
  else
    vim.health.info('no LLM configured: answers list the ranked sources', {
      'set OPENAI_API_KEY or ANTHROPIC_API_KEY in the environment Neovim starts from (settings.llm picks provider and model)',
    })
  end
end

return M
