-- Driven by tests/test_nvim.py: :checkhealth codeask for a server command given in
-- CODEASK_NVIM_CMD (a JSON list); the report goes to CODEASK_NVIM_OUT. Also checks the version
-- comparison the plugin refuses old servers with.
local harness = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':h') .. '/harness.lua')
harness.run('test_health.lua', function()
  local codeask = require('codeask').setup({ cmd = vim.json.decode(os.getenv('CODEASK_NVIM_CMD')) })
  vim.cmd('checkhealth codeask')
  local report = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
  local out = {
    health = report,
    newer = codeask.version_problem('0.10.0') == nil,
    older = codeask.version_problem('0.0.9') or vim.NIL,
    compare = { codeask.compare_versions('0.10.0', '0.9.2'), codeask.compare_versions('1.0', '1.0.0'),
                codeask.compare_versions('0.1.0', '0.2.0') },
  }
  return out
end)
